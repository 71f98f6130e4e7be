package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

func TestIssuedCertificateVerifiesAgainstItsCA(t *testing.T) {
	now := time.Now().Add(-time.Hour)
	ca, err := NewCA("test-ca", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(&x509.Certificate{Subject: pkix.Name{CommonName: "svc"}, DNSNames: []string{"svc.ns.svc"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, now, time.Hour*2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err != nil {
		t.Fatalf("the PEM pair does not load: %v", err)
	}
	back, err := Parse(ca.CertPEM, ca.KeyPEM)
	if err != nil || !back.Cert.Equal(ca.Cert) || !back.Key.Equal(ca.Key) {
		t.Fatalf("CA does not parse back: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(back.Cert)
	for _, name := range []string{"svc.ns.svc", "10.0.0.1"} {
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(3 * time.Hour)}); err == nil {
		t.Error("the certificate verifies after its validity")
	}
	other, _ := NewCA("other", now, time.Hour)
	pool2 := x509.NewCertPool()
	pool2.AddCert(other.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool2}); err == nil {
		t.Error("the certificate verifies against another CA")
	}
	if _, err := Parse([]byte("junk"), ca.KeyPEM); err == nil {
		t.Error("Parse accepted junk")
	}
}
