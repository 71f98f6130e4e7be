package members

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/straitnet/strait/internal/kubewatch"
)

// Key names one member connection: a cluster of a ClusterSet. The same API server in two
// ClusterSets gets two connections; they write objects labelled for their own set.
type Key struct {
	ClusterSet types.NamespacedName
	Cluster    string
}

func (k Key) String() string { return k.ClusterSet.String() + "/" + k.Cluster }

// ChangeFunc is called when something the hub watches changes in a member: obj is the
// changed object (deleted says whether it went away), or nil for a change of health;
// old is the object before an update, nil for an add, a delete or a change of health.
type ChangeFunc func(key Key, old, obj client.Object, deleted bool)

// Options of a Cache.
type Options struct {
	Scheme *runtime.Scheme
	// Watched are the kinds whose changes in a member are reported, each with the
	// namespace to watch in ("" for all namespaces).
	Watched []Watch
	// ProbeInterval is how often a member's API server is health-checked; default 5s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one health check and the first sync of the informers;
	// default 3s.
	ProbeTimeout time.Duration
	// OnChange receives every change; it must not block.
	OnChange ChangeFunc
	// Prints, when set, gives each connection the function its informers fingerprint
	// the watched objects with: Member.Print then tells, per kind, the count and the
	// fingerprint sum of those that count, kept from the events without a list.
	Prints func(Key) PrintFunc
	// FieldManager is the hub's own field manager: the informers drop every managed
	// fields entry but those of other managers on the main resource, which they keep
	// without their fields (see KeepOthersManagers).
	FieldManager string
	// Mapper, when set, maps every kind the connections read or write to its resource,
	// in place of the REST mappers their client and informers would each build from the
	// member's discovery. A member that does not serve a watched kind is then not
	// connected, with a "no matches for kind" error, as it was when the mappers found out
	// (see Member.servesWatched).
	Mapper meta.RESTMapper
	Log    logr.Logger
}

// Watch is one watched kind.
type Watch struct {
	Object    client.Object
	Namespace string
	// Label, when set, keeps only the objects it selects: the API server sends no
	// other, and the informer holds none.
	Label labels.Selector
}

// Cache holds the member connections.
type Cache struct {
	opts  Options
	mu    sync.Mutex
	conns map[Key]*Member
}

// NewCache returns an empty cache.
func NewCache(opts Options) *Cache {
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = 5 * time.Second
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = 3 * time.Second
	}
	if opts.OnChange == nil {
		opts.OnChange = func(Key, client.Object, client.Object, bool) {}
	}
	return &Cache{opts: opts, conns: map[Key]*Member{}}
}

// RESTConfigFromKubeConfig parses a kubeconfig as stored in a member's Secret.
func RESTConfigFromKubeConfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig: %w", err)
	}
	return cfg, nil
}

// Connect returns the connection for key, building it when there is none, when it was
// built from another version of the kubeconfig (version is the Secret's
// resourceVersion), or when the member has answered again after an outage (its
// informers would catch up only after client-go's relist backoff). cfg is called only
// to build one: a kubeconfig is parsed once per version, not once per reconcile. A new
// connection starts its informers and its probe in the background; it is usable once
// Connected says so.
func (c *Cache) Connect(key Key, version string, cfg func() (*rest.Config, error)) (*Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.conns[key]; m != nil {
		if m.version == version && !m.stale.Load() {
			return m, nil
		}
		m.stop()
		delete(c.conns, key)
	}
	rc, err := cfg()
	if err != nil {
		return nil, err
	}
	m, err := c.newMember(key, rc, version)
	if err != nil {
		return nil, err
	}
	c.conns[key] = m
	return m, nil
}

// Get returns the connection for key, or nil.
func (c *Cache) Get(key Key) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[key]
}

// Forget stops and drops the connection for key.
func (c *Cache) Forget(key Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.conns[key]; m != nil {
		m.stop()
		delete(c.conns, key)
	}
}

// Keys lists the connections of a ClusterSet, sorted by cluster.
func (c *Cache) Keys(cs types.NamespacedName) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Key
	for k := range c.conns {
		if k.ClusterSet == cs {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

// Len is the number of connections.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// Stop stops every connection.
func (c *Cache) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, m := range c.conns {
		m.stop()
		delete(c.conns, k)
	}
}

func (c *Cache) newMember(key Key, cfg *rest.Config, version string) (*Member, error) {
	cfg = rest.CopyConfig(cfg)
	// A member that hangs must not hold the reconcile: every request is bounded.
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return uncompressedWatches{rt} })
	direct, err := client.New(cfg, client.Options{Scheme: c.opts.Scheme, Mapper: c.opts.Mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", key, err)
	}
	byObject := map[client.Object]cache.ByObject{}
	for _, w := range c.opts.Watched {
		var by cache.ByObject
		if w.Namespace != "" {
			by.Namespaces = map[string]cache.Config{w.Namespace: {}}
		}
		by.Label = w.Label
		if by.Namespaces != nil || by.Label != nil {
			byObject[w.Object] = by
		}
	}
	// Managed fields are most of a small object: the informers keep only who else, besides
	// the hub, owns fields outside the status (see KeepOthersManagers). A member's API server that comes back is followed within seconds
	// (kubewatch), not after client-go's back-off of up to a minute.
	informers, err := cache.New(cfg, cache.Options{Scheme: c.opts.Scheme, Mapper: c.opts.Mapper, ByObject: byObject, ReaderFailOnMissingInformer: true,
		DefaultTransform: KeepOthersManagers(c.opts.FieldManager), NewInformer: kubewatch.NewSharedIndexInformer})
	if err != nil {
		return nil, fmt.Errorf("informers for %s: %w", key, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{Key: key, Client: direct, Reader: informers, version: version, cancel: cancel, disco: disco,
		cfg: cfg, log: c.opts.Log.WithValues("member", key.String()), opts: &c.opts, done: make(chan struct{}),
		syncedCh: make(chan struct{})}
	kinds := make([]string, len(c.opts.Watched))
	for i, w := range c.opts.Watched {
		gvk, err := apiutil.GVKForObject(w.Object, c.opts.Scheme)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("kind of %T: %w", w.Object, err)
		}
		kinds[i] = gvk.Kind
		m.watched = append(m.watched, gvk)
	}
	if c.opts.Prints != nil {
		m.Prints = NewPrints(c.opts.Prints(key), kinds...)
	}
	for i, w := range c.opts.Watched {
		if err := m.addHandlers(ctx, informers, w.Object, kinds[i]); err != nil {
			cancel()
			return nil, fmt.Errorf("event handler for %T in %s: %w", w.Object, key, err)
		}
	}
	go m.run(ctx, informers)
	return m, nil
}

// addHandlers registers the member's event handler on the informer of obj's kind: the
// one that reports changes and, with Options.Prints, keeps the kind's print from the
// informer's first list on, first. One handler, not two: an informer holds a buffer of
// 1,024 events for each (16 KB), and a connection has an informer per watched kind.
func (m *Member) addHandlers(ctx context.Context, informers cache.Cache, obj client.Object, kind string) error {
	inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	h := m.handler()
	var prints toolscache.ResourceEventHandler
	if m.Prints != nil {
		prints = m.Prints.Handler(kind)
	}
	if prints != nil {
		h = inTurn(prints, h)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return err
	}
	if m.Prints != nil {
		m.Prints.setSynced(kind, reg.HasSynced)
	}
	return nil
}

// inTurn hands every event to first, then to then.
func inTurn(first, then toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			first.OnAdd(obj, initial)
			then.OnAdd(obj, initial)
		},
		UpdateFunc: func(old, obj any) {
			first.OnUpdate(old, obj)
			then.OnUpdate(old, obj)
		},
		DeleteFunc: func(obj any) {
			first.OnDelete(obj)
			then.OnDelete(obj)
		},
	}
}

func (m *Member) handler() toolscache.ResourceEventHandler {
	notify := func(old, obj any, deleted bool) {
		if !m.synced.Load() {
			return // the initial list is reported once, when the informers have synced
		}
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		prev, _ := old.(client.Object)
		m.opts.OnChange(m.Key, prev, o, deleted)
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { notify(nil, obj, false) },
		UpdateFunc: func(old, obj any) { notify(old, obj, false) },
		DeleteFunc: func(obj any) { notify(nil, obj, true) },
	}
}

// KeepOthersManagers is the informers' transform: of an object's managed fields it keeps
// only the entries of managers other than own on the object itself (not its status),
// without their fields: an edit by someone else shows as an entry, and an object the hub
// alone wrote has none. Whose fields they are is all the hub reads from them (see
// controllers' adoption of a cold start); the fields would be most of a small object.
func KeepOthersManagers(own string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		o, ok := in.(client.Object)
		if !ok {
			return in, nil
		}
		mf := o.GetManagedFields()
		if len(mf) == 0 {
			return in, nil
		}
		var kept []metav1.ManagedFieldsEntry
		for _, e := range mf {
			if e.Manager == own || e.Subresource != "" {
				continue
			}
			kept = append(kept, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation})
		}
		o.SetManagedFields(kept)
		return in, nil
	}
}
