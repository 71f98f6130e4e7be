// Package rbacaudit holds RBAC roles to what the API server saw their holders do. It
// reads the audit log a lab's API servers write (Metadata level, one JSON event a
// line), aggregates each ServiceAccount's authorized requests into accesses (verb,
// group, resource, namespace, name), lists the requests refused with 403 (excusing
// those made in the moments after an RBAC object that could grant them was deleted or
// written again after a deletion, and those before a started API server was ready), and
// compares the accesses with the grants of rendered Roles, ClusterRoles and their
// bindings: a grant no access used is reported unless an allowance says why it stays.
//
// It is pure computation over bytes and objects handed to it, apart from reading and
// writing the files it is given; it knows no lab, no cluster and no Strait daemon.
package rbacaudit
