// Package flux is the lab's Flux: the release of source-controller and kustomize-controller
// that test/fluxbin pins and builds, the objects that install them into flux-system as
// `flux install` lays them out (CRDs, ServiceAccounts and RBAC, the Deployments, the
// source-controller Service that serves artifacts to kustomize-controller), and their images.
//
// The objects come from the controllers' own config/ manifests in the Go module cache,
// built with kustomize (an overlay made here: namespace, ServiceAccounts, image refs of
// the locally built images, Flux's labels), so nothing of Flux is copied into this
// repository and a new pinned version brings its own CRDs and RBAC.
//
// It reads the module cache and runs `go mod download` in the wrapper module (which
// fills the module cache, the one place it writes to); it must not write anywhere else,
// talk to a cluster or build anything but image specs in memory.
package flux
