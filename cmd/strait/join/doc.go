// Package join is `strait join` and `strait unjoin`: they register a member cluster as
// docs/hub.md's four manual steps do, with the person's own credentials for the member
// and the hub. join first refuses a cluster the hub has under another name (its
// kube-system UID in a ClusterSet's status), then makes sure the member's hub-access
// token Secret exists (and replaces it with --rotate), writes the kubeconfig the hub
// reaches the member with into the hub as the Secret the ClusterSet names, and prints
// the member's spec.clusters entry with the CIDRs its API server tells (nodes'
// spec.podCIDRs summarised, the ServiceCIDR API's), or adds it to the ClusterSet file in
// the working tree (git first: plan/file's in-place edit, validated). unjoin undoes it
// in the order that keeps the hub able to prune the member: git first, then the hub's
// Secret once the hub has pruned, then the token.
package join
