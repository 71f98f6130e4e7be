// Package apiserver starts one real kube-apiserver and etcd (controller-runtime envtest)
// with Strait's and the MCS CRDs installed, for a package's tests (the dns packages, the
// gateway election), and cuts clients off it (Cut) as a crash or a partition would. It
// is test support only and touches nothing but the processes it starts.
package apiserver
