// Package controllers holds the hub: the ClusterSet reconciler that turns a ClusterSet
// and the facts observed in its members into every member's objects.
//
// One reconcile: get the ClusterSet → deferred status patch → finalizer and deletion →
// suspend → validate (plan.Validate, the webhook's validator) → connect to the members
// (package members) → read observed facts → plan.Compute → server-side apply per member
// under the field manager strait-hub → prune what is labelled for the ClusterSet but no
// longer desired, and everything in clusters that left it → status with Flux's
// Ready/Reconciling/Stalled conditions.
//
// It owns the objects labelled app.kubernetes.io/managed-by=strait-hub and
// strait.io/clusterset=<ns>.<name> in members, the ClusterSet status and finalizer in the
// hub, and namespaces it creates for imports (which it never deletes). It must not
// compute desired state itself (plan/ does) or touch objects it did not label.
package controllers
