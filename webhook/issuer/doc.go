// Package issuer is a small certificate authority: it creates a self-signed CA (ECDSA
// P-256) and issues certificates from it, everything in PEM. The hub's webhook rotates
// its serving certificate with it; the lab makes its control planes' certificates with
// it. It touches no files and no API: callers store what it returns.
package issuer
