// Package kustomize holds no code: it is the home of the install manifests (crd, hub,
// member, default) and of the test that builds them with the kustomize library, checks
// the objects a person relies on, applies them to real API servers, and runs the hub
// through the least-privilege member role.
package kustomize
