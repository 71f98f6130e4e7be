// Command flannelimage builds the lab's flanneld image (strait-lab/flannel:<version>)
// into a directory of tarballs (bin/images by default) from the flanneld make
// node-binaries built and Debian's iptables and nftables, and copies flannel's own
// manifest of the same release from the module cache beside it (kube-flannel-<version>.yml),
// which the lab patches per cluster when it installs flannel. It prints the image's name,
// digest and file.
package main
