// Command straitimage builds Strait's own container images into a directory of tarballs
// (bin/images by default), next to the lab's: strait/straitd (the static straitd binary on
// a minimal base) and strait/charon (the same binary with strongSwan's charon and the
// plugins Strait loads, unpacked from Debian's packages). The same sources, version and
// revision give byte-identical tarballs, which `ctr images import`, `kind load
// image-archive` and `crane push` read. It prints each image's name, digest and file.
//
// It builds on the lab's image builder (lab/image) and owns only the product images'
// definitions; it installs nothing on the host and touches no registry.
package main
