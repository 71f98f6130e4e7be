// Command bincache keeps the third-party programs make links (Kubernetes and etcd,
// containerd and the CNI plugins, Flux, Prometheus, CoreDNS, flanneld) in a cache outside
// the checkout, keyed by what they are built from. A fresh clone's bin/ is empty: with the
// Go build cache warm every package is compiled already, but each program is linked
// again, which cost .ci/run 60-160 s of its budget for programs that had not changed.
//
//	bincache -name k8s -out DIR -files "kube-apiserver etcd" -key go.mod -key go.sum -- COMMAND [ARG...]
//
// The key is a hash of the name, the command (with the output directory and the working
// directory written as placeholders, so that two clones share an entry), the contents of
// every -key file, the Go toolchain (go env GOVERSION GOOS GOARCH, GOTOOLCHAIN) and the
// -files. On a hit the files are copied into -out (new modification times: make then
// sees them newer than their prerequisites); on a miss COMMAND builds them into -out and
// they are stored, whole or not at all. The two most recently used entries of a name stay.
//
// The cache lives in $STRAIT_BIN_CACHE, by default $XDG_CACHE_HOME/strait/bin or
// ~/.cache/strait/bin, beside Go's own build cache; STRAIT_BIN_CACHE=off builds every time.
package main
