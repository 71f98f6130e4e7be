package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/internal/pki"
)

// CertOptions say which certificate the webhook needs and where it goes.
type CertOptions struct {
	// Secret holds the CA and the serving certificate, shared by the hub's replicas.
	Secret types.NamespacedName
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose caBundle is set.
	WebhookConfiguration string
	// DNSNames and IPs the serving certificate is valid for, e.g.
	// strait-hub-webhook.strait-system.svc.
	DNSNames []string
	IPs      []net.IP
	// CertDir is the webhook server's certificate directory (tls.crt, tls.key).
	CertDir string
	// Validity of the serving certificate (default one year; the CA lives ten times
	// longer), renewed when less than a third of it is left.
	Validity time.Duration
	// CheckInterval is how often renewal is checked; default one hour.
	CheckInterval time.Duration
	// RetryInterval is how often the caBundle injection is retried while the webhook
	// configuration does not exist yet (GitOps may apply it after the hub starts);
	// default five seconds.
	RetryInterval time.Duration
	Log           logr.Logger
}

// CertRotator keeps the webhook's certificate valid. Ensure must run once before the
// webhook server starts (it reads the files at start); Start keeps them fresh.
type CertRotator struct {
	c    client.Client
	opts CertOptions
	now  func() time.Time
	// waiting: the last Ensure did not find the webhook configuration (and said so once).
	waiting bool
	// expiry is the NotAfter of the serving certificate last written, in Unix seconds
	// (0 before the first).
	expiry atomic.Int64
}

// Expiry is when the serving certificate this replica serves expires; zero before
// Ensure first wrote one.
func (r *CertRotator) Expiry() time.Time {
	if s := r.expiry.Load(); s != 0 {
		return time.Unix(s, 0)
	}
	return time.Time{}
}

// NewCertRotator returns a rotator writing through c, an uncached client.
func NewCertRotator(c client.Client, opts CertOptions) *CertRotator {
	if opts.Validity == 0 {
		opts.Validity = 365 * 24 * time.Hour
	}
	if opts.CheckInterval == 0 {
		opts.CheckInterval = time.Hour
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = 5 * time.Second
	}
	return &CertRotator{c: c, opts: opts, now: time.Now}
}

// Start renews the certificate as needed until ctx ends. Every replica runs it: each
// needs the files, and the Secret decides which generated certificate wins.
// Until the webhook configuration exists it checks every RetryInterval.
func (r *CertRotator) Start(ctx context.Context) error {
	t := time.NewTimer(r.next())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := r.Ensure(ctx); err != nil {
				r.opts.Log.Error(err, "renewing the webhook certificate")
			}
			t.Reset(r.next())
		}
	}
}

func (r *CertRotator) next() time.Duration {
	if r.waiting {
		return r.opts.RetryInterval
	}
	return r.opts.CheckInterval
}

// NeedLeaderElection is false: every replica serves the webhook.
func (r *CertRotator) NeedLeaderElection() bool { return false }

// Ensure makes the Secret hold a CA and a serving certificate valid for the configured
// names for at least a third of their life, writes the serving pair to CertDir and
// injects the CA into the webhook configuration. A webhook configuration that does not
// exist yet is no error: the server can start, and Start injects the CA once it appears.
func (r *CertRotator) Ensure(ctx context.Context) error {
	var bundle *certBundle
	for attempt := 0; attempt < 5; attempt++ {
		b, err := r.ensureSecret(ctx)
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue // another replica wrote it first: use theirs
		}
		if err != nil {
			return err
		}
		bundle = b
		break
	}
	if bundle == nil {
		return errors.New("the webhook certificate Secret kept changing under us")
	}
	if err := r.writeFiles(bundle); err != nil {
		return err
	}
	return r.injectCABundle(ctx, bundle.caCert)
}

type certBundle struct {
	caCert, caKey, cert, key []byte
}

func (r *CertRotator) ensureSecret(ctx context.Context) (*certBundle, error) {
	sec := &corev1.Secret{}
	err := r.c.Get(ctx, r.opts.Secret, sec)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", r.opts.Secret, err)
	}
	cur := &certBundle{caCert: sec.Data["ca.crt"], caKey: sec.Data["ca.key"], cert: sec.Data[corev1.TLSCertKey], key: sec.Data[corev1.TLSPrivateKeyKey]}
	if r.fresh(cur) {
		return cur, nil
	}
	next, err := r.generate(cur)
	if err != nil {
		return nil, err
	}
	if !exists {
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: r.opts.Secret.Name, Namespace: r.opts.Secret.Namespace}, Type: corev1.SecretTypeTLS}
	}
	sec.Type = corev1.SecretTypeTLS
	sec.Data = map[string][]byte{"ca.crt": next.caCert, "ca.key": next.caKey, corev1.TLSCertKey: next.cert, corev1.TLSPrivateKeyKey: next.key}
	if exists {
		err = r.c.Update(ctx, sec)
	} else {
		err = r.c.Create(ctx, sec)
	}
	if err != nil {
		return nil, fmt.Errorf("writing Secret %s: %w", r.opts.Secret, err)
	}
	r.opts.Log.Info("webhook certificate issued", "secret", r.opts.Secret.String())
	return next, nil
}

// fresh: the serving certificate chains to the CA, covers every name, and both have
// more than a third of their life left.
func (r *CertRotator) fresh(b *certBundle) bool {
	ca, err := pki.ParseCert(b.caCert)
	if err != nil || !r.lifeLeft(ca) {
		return false
	}
	leaf, err := pki.ParseCert(b.cert)
	if err != nil || !r.lifeLeft(leaf) {
		return false
	}
	if _, err := tlsPair(b.cert, b.key); err != nil {
		return false
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: r.now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return false
	}
	for _, n := range r.opts.DNSNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	for _, ip := range r.opts.IPs {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func (r *CertRotator) lifeLeft(c *x509.Certificate) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(r.now()) > life/3 && r.now().After(c.NotBefore)
}

// generate issues a serving certificate, from the current CA while it has life left,
// else from a new CA.
func (r *CertRotator) generate(cur *certBundle) (*certBundle, error) {
	now := r.now()
	ca, err := pki.Parse(cur.caCert, cur.caKey)
	if err != nil || !r.lifeLeft(ca.Cert) {
		if ca, err = pki.NewCA("strait-hub-webhook-ca", now.Add(-time.Hour), 10*r.opts.Validity); err != nil {
			return nil, err
		}
	}
	cn := "strait-hub-webhook"
	if len(r.opts.DNSNames) > 0 {
		cn = r.opts.DNSNames[0]
	}
	leaf, err := ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    r.opts.DNSNames,
		IPAddresses: r.opts.IPs,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now.Add(-time.Hour), r.opts.Validity)
	if err != nil {
		return nil, err
	}
	return &certBundle{caCert: ca.CertPEM, caKey: ca.KeyPEM, cert: leaf.CertPEM, key: leaf.KeyPEM}, nil
}

// writeFiles writes tls.crt and tls.key when they differ; controller-runtime's
// certificate watcher picks them up.
func (r *CertRotator) writeFiles(b *certBundle) error {
	if err := os.MkdirAll(r.opts.CertDir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{corev1.TLSPrivateKeyKey: b.key, corev1.TLSCertKey: b.cert} {
		path := filepath.Join(r.opts.CertDir, name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	if blk, _ := pem.Decode(b.cert); blk != nil {
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			r.expiry.Store(c.NotAfter.Unix())
		}
	}
	return nil
}

func (r *CertRotator) injectCABundle(ctx context.Context, ca []byte) error {
	if r.opts.WebhookConfiguration == "" {
		return nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	err := r.c.Get(ctx, types.NamespacedName{Name: r.opts.WebhookConfiguration}, cfg)
	if apierrors.IsNotFound(err) {
		if !r.waiting {
			r.opts.Log.Info("webhook configuration not found; its caBundle is injected when it appears",
				"validatingWebhookConfiguration", r.opts.WebhookConfiguration)
		}
		r.waiting = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.opts.WebhookConfiguration, err)
	}
	patch := client.MergeFromWithOptions(cfg.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, ca) {
			cfg.Webhooks[i].ClientConfig.CABundle = ca
			changed = true
		}
	}
	if changed {
		if err := r.c.Patch(ctx, cfg, patch); err != nil {
			return fmt.Errorf("injecting caBundle into %s: %w", r.opts.WebhookConfiguration, err)
		}
	}
	r.waiting = false
	return nil
}

func tlsPair(cert, key []byte) (tls.Certificate, error) { return tls.X509KeyPair(cert, key) }
