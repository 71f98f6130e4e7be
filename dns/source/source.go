package source

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
	"github.com/straitnet/strait/internal/kubewatch"
)

// DefaultDebounce is how long the source gathers changes before it builds a snapshot.
const DefaultDebounce = 100 * time.Millisecond

// Options of a Source.
type Options struct {
	Overrides
	// Namespace of the Membership and the Peers; empty is strait-system.
	Namespace string
	// Debounce gathers a burst of changes into one rebuild; 0 is DefaultDebounce.
	Debounce time.Duration
	// OnError is told about objects the source could not take in; nil drops them. The
	// previous snapshot keeps being served meanwhile.
	OnError func(error)
	// OnListWatchError is told about every List or Watch of a resource that failed (an
	// API server away, a permission missing); nil drops them. Meanwhile the snapshot
	// being served is what the last successful ones saw.
	OnListWatchError func(resource string, err error)
	// OnServed is told, after every snapshot but the first (what the initial lists
	// found), how long ago the first change it took in arrived; nil drops it.
	OnServed func(sinceChange time.Duration)
}

// Source watches the member's ServiceImports, MCS EndpointSlices, Peers and Membership
// and publishes a new snapshot after every change. Its reflectors hand every object to
// a store (store.go) that keeps records, not the typed objects.
type Source struct {
	opts       Options
	state      *state
	reflectors []*toolscache.Reflector
	publish    func(*resolver.Snapshot)
	dirty      chan struct{}
	serial     uint32
	// lastBuild is how long the last rebuild took.
	lastBuild time.Duration
	// mu guards changed: when the first change not yet in a published snapshot
	// arrived (zero: none).
	mu      sync.Mutex
	changed time.Time
}

// Scheme has every type the source reads, and the Kubernetes built-in types, for the
// clients of those who write them.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	err := errors.Join(clientgoscheme.AddToScheme(s), straitv1.AddToScheme(s), mcsv1.Install(s))
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	return s, nil
}

// watched is one kind the source watches.
type watched struct {
	kind     kind
	gv       schema.GroupVersion
	resource string
	example  runtime.Object
	// system says that the objects live in the source's namespace only.
	system bool
	// selector, when not empty, is the label selector of the list and watch.
	selector string
}

func watchedKinds() []watched {
	return []watched{
		{kindImport, mcsv1.SchemeGroupVersion, "serviceimports", &mcsv1.ServiceImport{}, false, ""},
		{kindSlice, discoveryv1.SchemeGroupVersion, "endpointslices", &discoveryv1.EndpointSlice{}, false, mcsv1.LabelSourceCluster},
		{kindPeer, straitv1.GroupVersion, "peers", &straitv1.Peer{}, true, ""},
		{kindMembership, straitv1.GroupVersion, "memberships", &straitv1.Membership{}, true, ""},
	}
}

// New creates a source reading through cfg; publish receives every new snapshot.
func New(cfg *rest.Config, opts Options, publish func(*resolver.Snapshot)) (*Source, error) {
	if opts.Namespace == "" {
		opts.Namespace = straitv1.SystemNamespace
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	// Only the watched kinds: the decoder needs nothing else.
	scheme := runtime.NewScheme()
	if err := errors.Join(discoveryv1.AddToScheme(scheme), straitv1.AddToScheme(scheme), mcsv1.Install(scheme)); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating HTTP client: %w", err)
	}
	s := &Source{opts: opts, publish: publish, dirty: make(chan struct{}, 1)}
	s.state = newState(newInterner(), s.markDirty)
	for _, w := range watchedKinds() {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &w.gv
		c.APIPath = "/apis"
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if w.gv.Group == discoveryv1.GroupName {
			// Built-in types decode faster, and with less garbage, from protobuf.
			c.ContentType = runtime.ContentTypeProtobuf
			c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("creating client for %s: %w", w.resource, err)
		}
		ns := ""
		if w.system {
			ns = opts.Namespace
		}
		selector := w.selector
		var lw toolscache.ListerWatcher = toolscache.NewFilteredListWatchFromClient(rc, w.resource, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		if opts.OnListWatchError != nil {
			lw = reportingErrors(lw, func(err error) { opts.OnListWatchError(w.resource, err) })
		}
		store := kindStore{s: s.state, kind: w.kind, onError: opts.OnError}
		s.reflectors = append(s.reflectors, toolscache.NewReflectorWithOptions(kubewatch.Resuming(lw), w.example, store,
			toolscache.ReflectorOptions{Name: "strait-dns/" + w.resource}))
	}
	return s, nil
}

// Run watches and publishes until ctx is done. The first snapshot is published once
// every kind has been listed in full.
func (s *Source) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, r := range s.reflectors {
		wg.Go(func() { r.RunWithContext(ctx) })
	}
	for !s.state.isSynced() {
		select {
		case <-ctx.Done():
			return nil
		case <-s.dirty:
		}
	}
	s.rebuild()
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.dirty:
			// A rebuild is not started sooner than the last one took, so that a
			// churning clusterset cannot keep the server's CPU busy rebuilding.
			timer.Reset(max(s.opts.Debounce, s.lastBuild))
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
			// Changes that arrived while waiting are in this rebuild.
			select {
			case <-s.dirty:
			default:
			}
			s.rebuild()
		}
	}
}

func (s *Source) markDirty() {
	s.mu.Lock()
	if s.changed.IsZero() {
		s.changed = time.Now()
	}
	s.mu.Unlock()
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

func (s *Source) rebuild() {
	start := time.Now()
	s.mu.Lock()
	changed := s.changed
	s.changed = time.Time{}
	s.mu.Unlock()
	s.serial++
	s.publish(s.state.build(s.opts.Namespace, s.opts.Overrides, s.serial))
	s.lastBuild = time.Since(start)
	if s.serial > 1 && !changed.IsZero() && s.opts.OnServed != nil {
		s.opts.OnServed(time.Since(changed))
	}
}
