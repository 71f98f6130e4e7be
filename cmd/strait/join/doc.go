// Package join is `strait join` and `strait unjoin`: they register a member cluster as
// docs/hub.md's four manual steps do, with the person's own credentials for the member
// and the hub. join first refuses a cluster the hub has under another name (its
// kube-system UID in a ClusterSet's status); with --install it then applies Strait's
// member install (a kustomization) to the member; it makes sure the member's hub-access
// token Secret exists (and replaces it with --rotate); it writes the kubeconfig the hub
// reaches the member with into the hub as the Secret the ClusterSet names or, with
// --sops, that Secret SOPS-encrypted into the clusterset repo beside the file (and into
// the kustomization.yaml there) instead of the hub; and it prints the member's
// spec.clusters entry with the CIDRs its API server tells (nodes' spec.podCIDRs
// summarised, the ServiceCIDR API's), or adds it to the ClusterSet file in the working
// tree (git first: plan/file's in-place edit, validated), committed with --commit.
// unjoin undoes it in the order that keeps the hub able to prune the member: git first,
// then the hub's Secret once the hub has pruned, then the token.
package join
