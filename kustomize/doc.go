// Package kustomize holds no code: it is the home of the install manifests (crd, hub,
// member, default) and of the tests that build them with the kustomize library, check
// the objects a person relies on, apply them to real API servers, ask those servers what
// each ServiceAccount may and may not do, and run the hub, the agent and strait dns
// under their own ServiceAccounts.
package kustomize
