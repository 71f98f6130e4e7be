package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of a Kubernetes control plane's PEM files (the lab's clusters).
type Files struct {
	Dir                                  string
	CACert, CAKey                        string
	ServingCert, ServingKey              string
	AdminCert, AdminKey                  string
	ServiceAccountKey, ServiceAccountPub string
}

// FilesIn names the files in dir.
func FilesIn(dir string) Files {
	p := func(n string) string { return filepath.Join(dir, n) }
	return Files{Dir: dir,
		CACert: p("ca.crt"), CAKey: p("ca.key"),
		ServingCert: p("apiserver.crt"), ServingKey: p("apiserver.key"),
		AdminCert: p("admin.crt"), AdminKey: p("admin.key"),
		ServiceAccountKey: p("sa.key"), ServiceAccountPub: p("sa.pub"),
	}
}

// EnsureControlPlane writes every file of FilesIn(dir) that is missing: a CA, the API
// server's serving certificate, an admin client certificate (system:masters) and the
// service-account signing key. ips and dnsNames are the API server's
// subject alternative names. A lab whose files all exist keeps them.
func EnsureControlPlane(dir string, ips []net.IP, dnsNames []string) (Files, error) {
	f := FilesIn(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	if exists(f.CACert, f.CAKey, f.ServingCert, f.ServingKey, f.AdminCert, f.AdminKey, f.ServiceAccountKey, f.ServiceAccountPub) {
		return f, nil
	}
	const validity = 10 * 365 * 24 * time.Hour
	now := time.Now().Add(-time.Hour)
	ca, err := NewCA("strait-lab-ca", now, validity)
	if err != nil {
		return f, err
	}
	errs := []error{write(f.CACert, ca.CertPEM), write(f.CAKey, ca.KeyPEM)}
	leaf := func(certPath, keyPath string, t *x509.Certificate) error {
		t.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		p, err := ca.Issue(t, now, validity)
		if err != nil {
			return err
		}
		return errors.Join(write(certPath, p.CertPEM), write(keyPath, p.KeyPEM))
	}
	errs = append(errs,
		leaf(f.ServingCert, f.ServingKey, &x509.Certificate{
			Subject: pkix.Name{CommonName: "kube-apiserver"}, IPAddresses: ips, DNSNames: dnsNames,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}),
		leaf(f.AdminCert, f.AdminKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "strait-lab-admin", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}))
	saKey, err := NewKey()
	if err != nil {
		return f, err
	}
	key, kerr := EncodeKey(saKey)
	pub, perr := EncodePublicKey(saKey)
	if err := errors.Join(kerr, perr); err != nil {
		return f, err
	}
	errs = append(errs, write(f.ServiceAccountKey, key), write(f.ServiceAccountPub, pub))
	return f, errors.Join(errs...)
}

func exists(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

func write(path string, pem []byte) error { return os.WriteFile(path, pem, 0o600) }
