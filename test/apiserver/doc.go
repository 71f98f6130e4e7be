// Package apiserver starts one real kube-apiserver and etcd (controller-runtime envtest)
// with Strait's and the MCS CRDs installed, for the tests of the dns packages. It is
// test support only and touches nothing but the processes it starts.
package apiserver
