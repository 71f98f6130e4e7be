// Package file edits a ClusterSet file in a git working tree and commits it: git first,
// as `strait export`, `strait unexport`, `strait join -f`, `strait unjoin -f` and the
// lab (the ClusterSet it commits, less its unjoined clusters) change it. An edit
// changes an export (Edit) or adds or removes a cluster's entry (AddCluster,
// RemoveCluster), keeping the file's comments and layout (kyaml, as kustomize edits
// files); the file must pass plan.Parse and plan.Validate (what strait render, the
// webhook and the hub run) before and after. GitCommit commits the file alone and Rewrite writes it;
// Clusters and Exports read the file for the commands' shell completion.
//
// The edits (edit.go, cluster.go) are pure: bytes in, bytes out. Only git.go writes
// (GitCommit runs git in the file's directory, Rewrite writes the file) and only
// complete.go reads. It talks to no cluster and holds no command: those are under
// cmd/strait.
package file
