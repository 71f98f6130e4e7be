// Package export is `strait export` and `strait unexport`: git first, they change the
// exports of a ClusterSet file in the working tree with plan/file's edit (comments and
// layout kept, the result validated as strait render validates it), print the diff and,
// with --commit, commit the file with git. They talk to no cluster: Flux or Argo CD
// applies the commit.
package export
