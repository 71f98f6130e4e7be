// Package image builds the container images of the lab's real nodes without Docker and
// without a registry: reproducible image tarballs (fixed timestamps, sorted entries, owner
// root, so the same inputs give the same digest) that `ctr images import` loads into a
// node's containerd. Layers come from files (static Go programs built here) or from
// Debian packages unpacked with dpkg-deb, never from a registry.
//
// It owns its output directory and its download cache; it runs `go build`, `apt-cache`,
// `apt-get download` and `dpkg-deb`, and must not install anything on the host.
package image
