package members

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Member is one connection to a member cluster.
type Member struct {
	Key Key
	// Client talks to the member's API server directly; the hub writes through it.
	Client client.Client
	// Reader reads the watched kinds from the informers: what the member held when it
	// was last reachable.
	Reader client.Reader
	// Prints are the prints of the watched kinds, kept by the informers' event handlers
	// (Options.Prints); nil without.
	Prints *Prints

	version string
	cfg     *rest.Config
	log     logr.Logger
	opts    *Options
	cancel  context.CancelFunc
	done    chan struct{}

	synced   atomic.Bool
	syncedCh chan struct{}
	// stale: the member answered again after it had not; its informers may be waiting
	// out client-go's relist backoff (up to 30 s after a long outage), so Cache.Connect
	// builds the connection afresh, whose informers list at once.
	stale atomic.Bool
	// watched are the kinds of Options.Watched; served: the member was found to serve
	// them all (servesWatched).
	watched []schema.GroupVersionKind
	served  atomic.Bool
	disco   *discovery.DiscoveryClient
	mu      sync.Mutex
	health  Health
	// kubeSystemUID, once read, is which cluster this connection reaches; it cannot
	// change while the connection stands (a new kubeconfig is a new connection).
	kubeSystemUID types.UID
}

// Health is what the last probe found.
type Health struct {
	// Connected: the API server answered /readyz and the informers have synced.
	Connected bool
	// Err is why not.
	Err error
	// Since is when Connected last changed.
	Since time.Time
}

// Health returns the result of the last probe.
func (m *Member) Health() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.health
}

// Version is the kubeconfig version the connection was built from.
func (m *Member) Version() string { return m.version }

func (m *Member) stop() {
	m.cancel()
	<-m.done
}

// run starts the informers, then probes the API server every ProbeInterval and reports
// every change of health.
func (m *Member) run(ctx context.Context, informers cache.Cache) {
	defer close(m.done)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := informers.Start(ctx); err != nil && ctx.Err() == nil {
			m.log.Error(err, "member informers stopped")
		}
	}()
	defer wg.Wait()
	probe := func() {
		pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
		defer cancel()
		err := m.disco.RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
		if err == nil && !m.synced.Load() {
			err = m.servesWatched(pctx)
		}
		if err == nil && !m.synced.Load() {
			if informers.WaitForCacheSync(pctx) {
				m.synced.Store(true)
				close(m.syncedCh)
			} else {
				err = errors.New("the member's objects could not be listed in time")
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			err = fmt.Errorf("API server %s: %w", m.cfg.Host, err)
		}
		m.setHealth(err)
	}
	probe()
	t := time.NewTicker(m.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			probe()
		}
	}
}

// Stale says the member answered again after it had not: the cache builds its
// connection anew (Cache.Connect).
func (m *Member) Stale() bool { return m.stale.Load() }

func (m *Member) setHealth(err error) {
	m.mu.Lock()
	prev := m.health
	now := err == nil
	changed := prev.Since.IsZero() || prev.Connected != now
	m.health.Connected, m.health.Err = now, err
	if changed {
		m.health.Since = time.Now()
	}
	m.mu.Unlock()
	if changed {
		if err != nil {
			m.log.Info("member unreachable", "error", err.Error())
		} else {
			m.log.Info("member connected")
			if !prev.Since.IsZero() {
				m.stale.Store(true)
			}
		}
		m.opts.OnChange(m.Key, nil, nil, false)
	}
}

// ErrListing is Probe's answer while the API server answers but the informers have not
// listed the member's objects yet.
var ErrListing = errors.New("the member's objects are still being listed")

// Probe checks the member now, updating Health, and returns the error if any. The
// reconciler calls it before writing, so a member that went away since the last
// periodic probe is found before a write waits on it.
func (m *Member) Probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	if err := m.readyz(pctx); err != nil {
		m.setHealth(err)
		return err
	}
	if !m.synced.Load() {
		if err := m.servesWatched(pctx); err != nil {
			err = fmt.Errorf("API server %s: %w", m.cfg.Host, err)
			m.setHealth(err)
			return err
		}
		select {
		case <-m.syncedCh:
		case <-pctx.Done():
			return ErrListing
		}
	}
	m.setHealth(nil)
	return nil
}

// readyz asks the member's API server whether it is ready. A stand-in (NewStandIn),
// which has no API server, is asked through its client for the kube-system namespace.
func (m *Member) readyz(ctx context.Context) error {
	if m.disco == nil {
		if err := m.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, &corev1.Namespace{}); err != nil {
			return fmt.Errorf("stand-in %s: %w", m.Key, err)
		}
		return nil
	}
	if err := m.disco.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("API server %s: %w", m.cfg.Host, err)
	}
	return nil
}

// NewStandIn is a connection to a member that no API server answers for: c takes the
// requests the hub would send the API server, rd the reads it would make from the
// informers, prints (nil: none) are the prints those would keep. Tests use it where
// real API servers do not fit (the controllers' benchmark of an export into 255
// members); nothing else makes one, and a Cache never holds one. It counts as listed
// from the start; Probe asks c for the kube-system namespace in place of /readyz.
func NewStandIn(key Key, c client.Client, rd client.Reader, prints *Prints) *Member {
	done := make(chan struct{})
	close(done)
	m := &Member{Key: key, Client: c, Reader: rd, Prints: prints, log: logr.Discard(), cancel: func() {}, done: done,
		opts:     &Options{ProbeTimeout: 3 * time.Second, OnChange: func(Key, client.Object, client.Object, bool) {}},
		syncedCh: make(chan struct{})}
	m.synced.Store(true)
	close(m.syncedCh)
	return m
}

// Print is the print of the objects of kind that count (Options.Prints), as the
// informer's event handler has been handed them; ok is false when there is none yet.
// It runs behind the informer's store and behind the API server: a print that differs
// from what the caller expects may only mean that a change is on its way.
func (m *Member) Print(kind string) (Print, bool) {
	if m.Prints == nil {
		return Print{}, false
	}
	return m.Prints.Print(kind)
}

// Synced says whether the informers have listed the member at least once.
func (m *Member) Synced() bool { return m.synced.Load() }

// KubeSystemUID returns the UID of the member's kube-system namespace: which cluster the
// connection reaches, however the kubeconfig reaches it. It is read once, by a direct
// get (the hub's role in the member grants get on namespaces), and kept for the life of
// the connection, so that it is known while the member is unreachable too.
func (m *Member) KubeSystemUID(ctx context.Context) (types.UID, error) {
	m.mu.Lock()
	uid := m.kubeSystemUID
	m.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading namespace %s, whose UID tells which cluster this is: %w", metav1.NamespaceSystem, err)
	}
	m.mu.Lock()
	m.kubeSystemUID = ns.UID
	m.mu.Unlock()
	return ns.UID, nil
}

// KnownKubeSystemUID is the UID KubeSystemUID read, or "" before it has.
func (m *Member) KnownKubeSystemUID() types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kubeSystemUID
}
