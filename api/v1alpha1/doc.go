// Package v1alpha1 holds Strait's API, group strait.io, version v1alpha1.
//
// The hub cluster holds one kind, ClusterSet: the whole desired clusterset as it is kept
// in git. Member clusters hold the objects the hub computes from it (Membership, Peer,
// GlobalIngress) and the objects the node agents publish (Gateway). Multi-Cluster
// Services objects are not defined here: Strait uses sigs.k8s.io/mcs-api.
//
// This package holds types, markers and constants only; no logic beyond deepcopy.
//
// +kubebuilder:object:generate=true
// +groupName=strait.io
package v1alpha1
