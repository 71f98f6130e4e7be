// Command argocdimages builds the images of the lab's Argo CD into a directory of
// tarballs (bin/images by default): strait-lab/argocd:<version>, from the program make
// argocd-binaries built, kustomize and Debian's git, and strait-lab/argocd-redis:<version>
// from Debian's redis-server; and the install manifest (argocd-install.yaml) of the
// version test/argocdbin pins. It prints each image's name, digest and file.
package main
