// Package controllers holds the hub: the ClusterSet reconciler that turns a ClusterSet
// and the facts observed in its members into every member's objects.
//
// One reconcile: get the ClusterSet → deferred status patch → finalizer and deletion →
// suspend → validate and default once (plan.Check, the webhook's validator) → connect to
// the members (package members; which cluster each is, its kube-system UID) → read
// observed facts → compute the plan (refused, and the ClusterSet Stalled with nothing
// written, when the facts make the spec invalid: one cluster under two entries) → skip
// each member whose inputs (plan.MemberDigest) are those of its last successful pass,
// unless its connection changed, the watch saw someone else change the hub's objects
// there, or the resync (spec.interval) is due → server-side apply per member under the
// field manager strait-hub (the IPsec key read from the hub's Secret into the plan's PSK
// Secret) → prune what is labelled for the ClusterSet but no longer desired, and
// everything in clusters that left it (not in a cluster that left while the spec still
// has it under another name: what is there is that entry's) → release the clusters that
// left and hold nothing more → status: the plan's, plus what only the reconcile observed
// (reachability, apply and prune results), with Flux's Ready/Reconciling/Stalled
// conditions.
//
// It owns the objects labelled app.kubernetes.io/managed-by=strait-hub and
// strait.io/clusterset=<ns>.<name> in members, the ClusterSet status and finalizer in the
// hub, and namespaces it creates for imports (which it never deletes). It must not
// compute desired state or a status field the plan computes (plan/ does) or touch
// objects it did not label.
package controllers
