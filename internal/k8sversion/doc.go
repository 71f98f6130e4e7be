// Package k8sversion holds the one Kubernetes version the project builds its
// control-plane test binaries at (bin/k8s/<Version>, built from test/k8sbin) and that the
// lab's nodes report (strait lab reads it, so it is product code, not under test/). The
// Makefile reads the constant from version.go, so that file keeps it on a line of its
// own. It owns nothing else.
package k8sversion
