// Package diff is `strait diff`: what a change to a ClusterSet file will do before it
// lands. The hub's ClusterSet is sent as a server-side dry-run apply, so the CRD's
// schema and the webhook judge it, and compared with the live one; every member's
// objects are computed by plan.Compute from that ClusterSet and the facts read live
// from the members (controllers.ReadMemberFacts, the hub's own reader), dry-run applied
// in each member as the hub would apply them, and compared with what the member holds,
// including what the hub would prune (controllers.ListOwned). The result is printed as
// unified diffs with kubectl diff's exit codes.
//
// It computes no desired state of its own (plan does) and writes nothing: every request
// that could change a cluster carries dryRun=All.
package diff
