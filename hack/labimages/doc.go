// Command labimages builds the images of the lab's real nodes into a directory of
// tarballs (bin/images by default): pause, whereami, iperf3, busybox and tools; with
// -conformance, the MCS conformance suite's socat and netshoot instead. The same sources
// give byte-identical tarballs; it prints each image's name, digest and file.
package main
