package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of a cluster's PEM files.
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

// Ensure writes every file that is missing. ips and dnsNames are the API server's
// subject alternative names. A CA that already exists is reused.
func Ensure(dir string, ips []net.IP, dnsNames []string) (Files, error) {
	f := FilesIn(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	if exists(f.CACert, f.CAKey, f.ServingCert, f.ServingKey, f.AdminCert, f.AdminKey, f.ServiceAccountKey, f.ServiceAccountPub) {
		return f, nil
	}
	caKey, err := newKey()
	if err != nil {
		return f, err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "strait-lab-ca"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, err
	}
	errs := []error{writeCert(f.CACert, caDER), writeKey(f.CAKey, caKey)}
	leaf := func(certPath, keyPath string, t *x509.Certificate) error {
		k, err := newKey()
		if err != nil {
			return err
		}
		t.SerialNumber, t.NotBefore, t.NotAfter = serial(), now, now.Add(10*365*24*time.Hour)
		t.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &k.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("certificate %s: %w", certPath, err)
		}
		return errors.Join(writeCert(certPath, der), writeKey(keyPath, k))
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
	saKey, err := newKey()
	if err != nil {
		return f, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return f, err
	}
	errs = append(errs, writeKey(f.ServiceAccountKey, saKey),
		os.WriteFile(f.ServiceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600))
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

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
