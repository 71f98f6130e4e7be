// Package exportcmd is `strait export` and `strait unexport`: git first, they change the
// exports of a ClusterSet file in the working tree, keeping its comments and layout
// (kyaml, as kustomize edits files), check the result with plan.Parse and plan.Validate
// (what strait render, the webhook and the hub run), print the diff and, with --commit,
// commit the file with git. They talk to no cluster: Flux or Argo CD applies the commit.
//
// The edit itself (edit.go) is pure: bytes in, bytes out.
package exportcmd
