// Command fluximages builds the images of the lab's Flux controllers into a directory of
// tarballs (bin/images by default), strait-lab/source-controller:<version> and
// strait-lab/kustomize-controller:<version>, from the binaries make flux-binaries built
// and the version test/fluxbin pins. It prints each image's name, digest and file.
package main
