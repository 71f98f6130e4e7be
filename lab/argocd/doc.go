// Package argocd is the lab's Argo CD: the release test/argocdbin pins and builds, the
// objects that install it into the argocd namespace from Argo CD's own
// manifests/install.yaml, and the images its pods run.
//
// The objects come from the module cache, as lab/flux reads Flux's config/, so nothing of
// Argo CD is copied into this repository. The lab keeps what a GitOps sync of the
// ClusterSet needs (application-controller, repo-server, Redis, argocd-server, their RBAC,
// ConfigMaps and Services) and leaves out Dex (single sign-on), the ApplicationSet and
// notifications controllers; every image is one built here (ImageSpec, RedisImageSpec):
// the multi-call argocd program with git and kustomize for the repo-server, and Debian's
// redis-server.
//
// It reads the module cache and runs `go mod download` in the wrapper module (with the
// toolchain its go.mod names); it must not write anywhere else, talk to a cluster or build
// anything but image specs in memory.
package argocd
