// Package pki makes the certificates of a lab cluster with crypto/x509: a CA, the API
// server's serving certificate, an admin client certificate (system:masters) and the
// service-account signing key. It only writes into the directory it is given, and reuses
// what is already there so "lab up" is idempotent.
package pki
