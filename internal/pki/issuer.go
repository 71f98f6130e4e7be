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
	"time"
)

// Pair is a certificate and its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are the same, PEM-encoded ("CERTIFICATE", "EC PRIVATE KEY").
	CertPEM, KeyPEM []byte
}

// NewCA creates a self-signed CA valid from notBefore for validity.
func NewCA(commonName string, notBefore time.Time, validity time.Duration) (*Pair, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: commonName},
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", commonName, err)
	}
	return pair(der, key)
}

// Issue signs a certificate for tmpl (subject, names, extended key usage) with a new
// key, valid from notBefore for validity. The serial number and validity are set here;
// KeyUsage defaults to digital signature.
func (ca *Pair) Issue(tmpl *x509.Certificate, notBefore time.Time, validity time.Duration) (*Pair, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	t := *tmpl
	t.SerialNumber, t.NotBefore, t.NotAfter = serial(), notBefore, notBefore.Add(validity)
	if t.KeyUsage == 0 {
		t.KeyUsage = x509.KeyUsageDigitalSignature
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", t.Subject.CommonName, err)
	}
	return pair(der, key)
}

// Parse reads a PEM certificate and its PEM EC key.
func Parse(certPEM, keyPEM []byte) (*Pair, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCert reads a PEM certificate.
func ParseCert(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// NewKey is a new ECDSA P-256 key.
func NewKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// EncodeKey is k as an "EC PRIVATE KEY" PEM block.
func EncodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey is k's public key as a "PUBLIC KEY" PEM block.
func EncodePublicKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func pair(der []byte, key *ecdsa.PrivateKey) (*Pair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, Key: key, KeyPEM: keyPEM,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// serial is a random 120-bit serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
