// Package pki is Strait's one certificate authority, with crypto/x509 and ECDSA P-256,
// everything in PEM. NewCA and Issue make a self-signed CA and certificates from it: the
// hub's webhook rotates its serving certificate with them (webhook/certs.go) and keeps
// the results in a Secret. EnsureControlPlane writes the certificates of a Kubernetes
// control plane (CA, API server, admin, service-account key) into a directory, reusing
// what is already there so "strait lab up" is idempotent.
//
// It talks to no API server and writes files only in the directory EnsureControlPlane
// is given; callers store everything else it returns.
package pki
