package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
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
	// OnError is told about failures to read the cache; nil drops them. The previous
	// snapshot keeps being served meanwhile.
	OnError func(error)
}

// Source watches the member's ServiceImports, MCS EndpointSlices, Peers and Membership
// and publishes a new snapshot after every change.
type Source struct {
	opts    Options
	cache   cache.Cache
	publish func(*resolver.Snapshot)
	dirty   chan struct{}
	serial  uint32
	prev    *resolver.Snapshot
	// lastBuild is how long the last read and rebuild took.
	lastBuild time.Duration
}

// Scheme has every type the source reads.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	err := errors.Join(clientgoscheme.AddToScheme(s), straitv1.AddToScheme(s), mcsv1.Install(s))
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	return s, nil
}

// New creates a source reading through cfg; publish receives every new snapshot.
func New(cfg *rest.Config, opts Options, publish func(*resolver.Snapshot)) (*Source, error) {
	if opts.Namespace == "" {
		opts.Namespace = straitv1.SystemNamespace
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	mcsSlice, err := labels.NewRequirement(mcsv1.LabelSourceCluster, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("building slice selector: %w", err)
	}
	system := map[string]cache.Config{opts.Namespace: {}}
	noCopy := true
	c, err := cache.New(cfg, cache.Options{
		Scheme:                       scheme,
		DefaultTransform:             slim,
		DefaultUnsafeDisableDeepCopy: &noCopy,
		ByObject: map[client.Object]cache.ByObject{
			&discoveryv1.EndpointSlice{}: {Label: labels.NewSelector().Add(*mcsSlice)},
			&straitv1.Peer{}:             {Namespaces: system},
			&straitv1.Membership{}:       {Namespaces: system},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating cache: %w", err)
	}
	return &Source{opts: opts, cache: c, publish: publish, dirty: make(chan struct{}, 1)}, nil
}

// Run watches and publishes until ctx is done. The first snapshot is published once
// every informer has synced.
func (s *Source) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.markDirty() },
		UpdateFunc: func(any, any) { s.markDirty() },
		DeleteFunc: func(any) { s.markDirty() },
	}
	for _, obj := range []client.Object{&mcsv1.ServiceImport{}, &discoveryv1.EndpointSlice{}, &straitv1.Peer{}, &straitv1.Membership{}} {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.cache.Start(ctx) }()
	if !s.cache.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("informers did not sync: %w", <-errc)
	}
	s.rebuild(ctx)
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			// On cancellation the cache may return before ctx.Done is seen here.
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				return errors.New("cache stopped")
			}
			return fmt.Errorf("cache stopped: %w", err)
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
			s.rebuild(ctx)
		}
	}
}

func (s *Source) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

func (s *Source) rebuild(ctx context.Context) {
	st, err := s.read(ctx)
	if err != nil {
		if s.opts.OnError != nil {
			s.opts.OnError(err)
		}
		return
	}
	start := time.Now()
	s.serial++
	s.prev = Build(st, s.opts.Overrides, s.serial, s.prev)
	s.publish(s.prev)
	s.lastBuild = time.Since(start)
}

// read lists what the answers depend on from the cache.
func (s *Source) read(ctx context.Context) (*State, error) {
	st := &State{}
	var m straitv1.Membership
	switch err := s.cache.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: straitv1.MembershipName}, &m); {
	case err == nil:
		st.Membership = &m
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading membership: %w", err)
	}
	var peers straitv1.PeerList
	var imports mcsv1.ServiceImportList
	var slices discoveryv1.EndpointSliceList
	err := errors.Join(
		s.cache.List(ctx, &peers, client.InNamespace(s.opts.Namespace)),
		s.cache.List(ctx, &imports),
		s.cache.List(ctx, &slices),
	)
	if err != nil {
		return nil, fmt.Errorf("listing from cache: %w", err)
	}
	st.Peers, st.Imports, st.Slices = peers.Items, imports.Items, slices.Items
	return st, nil
}
