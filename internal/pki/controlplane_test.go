package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

// The API server's certificate verifies for its addresses against the CA that is written
// next to it, and a second run keeps every file (lab up is run again to complete a lab).
func TestEnsureControlPlaneWritesAVerifiableSetOnce(t *testing.T) {
	dir := t.TempDir()
	f, err := EnsureControlPlane(dir, []net.IP{net.ParseIP("10.9.0.2")}, []string{"kubernetes.default"})
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(f.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	serving, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"10.9.0.2", "kubernetes.default"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if _, err := tls.LoadX509KeyPair(f.AdminCert, f.AdminKey); err != nil {
		t.Errorf("admin pair: %v", err)
	}

	again, err := EnsureControlPlane(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	caAgain, err := os.ReadFile(again.CACert)
	if err != nil || string(caAgain) != string(caPEM) {
		t.Errorf("second run replaced the CA (%v)", err)
	}
}
