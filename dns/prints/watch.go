package prints

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/kubewatch"
)

// resources are the kinds of memberprint.ReportedKinds watched as metadata only, by
// resource: all but the Peers (thePeers).
func resources() map[string]schema.GroupVersionResource {
	return map[string]schema.GroupVersionResource{
		"EndpointSlice": discoveryv1.SchemeGroupVersion.WithResource("endpointslices"),
		"Service":       corev1.SchemeGroupVersion.WithResource("services"),
		"ServiceImport": mcsv1.SchemeGroupVersion.WithResource("serviceimports"),
	}
}

// metadataOnly lists and watches a resource's objects with the hub's labels in every
// namespace, as metadata only: the API server sends nothing of their spec or status.
func metadataOnly(c metadata.Interface, gvr schema.GroupVersionResource) toolscache.ListerWatcher {
	hubs := labels.SelectorFromSet(labels.Set{straitv1.LabelManagedBy: straitv1.ManagedByHub}).String()
	r := c.Resource(gvr)
	return kubewatch.Resuming(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = hubs
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = hubs
			return r.Watch(ctx, o)
		},
	})
}

// theMembership lists and watches the one Membership in namespace.
func theMembership(c dynamic.Interface, namespace string) toolscache.ListerWatcher {
	r := c.Resource(straitv1.GroupVersion.WithResource("memberships")).Namespace(namespace)
	name := fields.OneTermEqualSelector("metadata.name", straitv1.MembershipName).String()
	return kubewatch.Resuming(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = name
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = name
			return r.Watch(ctx, o)
		},
	})
}

// thePeers lists and watches every Peer in namespace, the hub's or not, whole: the
// connections read their spec.clusterID and status, which a metadata-only watch does
// not send. There is a Peer for each other member of the member's ClusterSets, a
// thousand at most.
func thePeers(c dynamic.Interface, namespace string) toolscache.ListerWatcher {
	r := c.Resource(straitv1.GroupVersion.WithResource("peers")).Namespace(namespace)
	return kubewatch.Resuming(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, o)
		},
	})
}

// keeperStore is a reflector's store for one kind: the Keeper, which holds a
// fingerprint, not the object. Only while the reflector streams its first list does it
// hold objects of its own, stripped down by Transformer (none for the Peers: printedOnly
// would drop what they are read for).
type keeperStore struct {
	keeper    *Keeper
	kind      string
	transform toolscache.TransformFunc
	changed   func()
	synced    atomic.Bool
}

var _ toolscache.TransformingStore = (*keeperStore)(nil)

// Add implements toolscache.ReflectorStore.
func (s *keeperStore) Add(obj any) error { s.keeper.Saw(s.kind, obj); s.changed(); return nil }

// Update implements toolscache.ReflectorStore.
func (s *keeperStore) Update(obj any) error { s.keeper.Saw(s.kind, obj); s.changed(); return nil }

// Delete implements toolscache.ReflectorStore.
func (s *keeperStore) Delete(obj any) error { s.keeper.Gone(s.kind, obj); s.changed(); return nil }

// Replace implements toolscache.ReflectorStore.
func (s *keeperStore) Replace(list []any, _ string) error {
	s.keeper.Replace(s.kind, list)
	s.synced.Store(true)
	s.changed()
	return nil
}

// Resync implements toolscache.ReflectorStore; there is nothing to resync.
func (s *keeperStore) Resync() error { return nil }

// Transformer implements toolscache.TransformingStore.
func (s *keeperStore) Transformer() toolscache.TransformFunc { return s.transform }

// membershipStore is the Membership reflector's store: the one Membership, or nil.
type membershipStore struct {
	changed func()
	mu      sync.Mutex
	m       *straitv1.Membership
	synced  bool
	// err is the last object that could not be read as a Membership.
	err error
}

var _ toolscache.ReflectorStore = (*membershipStore)(nil)

// get is the Membership (nil: none) once the first list is in; ok says whether it is.
func (s *membershipStore) get() (m *straitv1.Membership, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m, s.synced, s.err
}

func (s *membershipStore) set(obj any, deleted bool) {
	var m *straitv1.Membership
	var err error
	if !deleted {
		m, err = asMembership(obj)
	}
	s.mu.Lock()
	if err == nil {
		s.m = m
	}
	s.err = err
	s.mu.Unlock()
	s.changed()
}

// Add implements toolscache.ReflectorStore.
func (s *membershipStore) Add(obj any) error { s.set(obj, false); return nil }

// Update implements toolscache.ReflectorStore.
func (s *membershipStore) Update(obj any) error { s.set(obj, false); return nil }

// Delete implements toolscache.ReflectorStore.
func (s *membershipStore) Delete(obj any) error { s.set(obj, true); return nil }

// Replace implements toolscache.ReflectorStore.
func (s *membershipStore) Replace(list []any, _ string) error {
	var obj any
	for _, o := range list {
		obj = o // the field selector lets one through at most
	}
	s.set(obj, obj == nil)
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	s.changed()
	return nil
}

// Resync implements toolscache.ReflectorStore; there is nothing to resync.
func (s *membershipStore) Resync() error { return nil }

func asMembership(obj any) (*straitv1.Membership, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("membership: unexpected %T", obj)
	}
	m := &straitv1.Membership{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m); err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	return m, nil
}

// printedOnly is the transform of the watched kinds: of an object it keeps what Keeper
// reads, its namespace, name, resourceVersion, the two labels that say which
// ClusterSet's print it counts in, the digest the hub wrote and who owns its fields
// (each managed fields entry's manager, operation, subresource and time, without the
// fields: memberprint.Of), and nothing else (no owner references, other annotations,
// UID or creation time). Namespaces and managers are interned, and objects with the
// same two labels share one map of them. The reflector's own store holds such objects
// while it streams a first list (some 40,000 at a thousand members with ten thousand
// exports); after it, only the keeper's fingerprints are held. It is not the Peers'
// transform: their print reads their generation and annotations, which it drops.
func printedOnly() toolscache.TransformFunc {
	var maps sharedLabels
	return func(in any) (any, error) {
		o, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		var digest map[string]string
		if d, ok := o.Annotations[straitv1.AnnotationDigest]; ok {
			digest = map[string]string{straitv1.AnnotationDigest: d}
		}
		managers := make([]metav1.ManagedFieldsEntry, len(o.ManagedFields))
		for i, e := range o.ManagedFields {
			managers[i] = metav1.ManagedFieldsEntry{Manager: unique.Make(e.Manager).Value(), Operation: e.Operation,
				Subresource: e.Subresource, Time: e.Time}
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace:       unique.Make(o.Namespace).Value(),
			Name:            o.Name,
			ResourceVersion: o.ResourceVersion,
			Labels:          maps.of(o.Labels),
			Annotations:     digest,
			ManagedFields:   managers,
		}}, nil
	}
}

// sharedLabels hands out one map a pair of values of the two labels. Nobody writes to
// the transformed objects, so they may share the map; the keeper holds the ClusterSet's
// value, which shares its bytes. A pair stays for the life of the process: there are as many as
// ClusterSets the member was ever written for.
type sharedLabels struct {
	mu   sync.Mutex
	maps map[labelPair]map[string]string
}

// labelPair is the two labels' values, and whether the object has each at all.
type labelPair struct {
	managedBy, clusterSet       string
	hasManagedBy, hasClusterSet bool
}

func (s *sharedLabels) of(l map[string]string) map[string]string {
	var p labelPair
	p.managedBy, p.hasManagedBy = l[straitv1.LabelManagedBy]
	p.clusterSet, p.hasClusterSet = l[straitv1.LabelClusterSet]
	if !p.hasManagedBy && !p.hasClusterSet {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.maps[p]; ok {
		return m
	}
	m := map[string]string{}
	if p.hasManagedBy {
		m[straitv1.LabelManagedBy] = p.managedBy
	}
	if p.hasClusterSet {
		m[straitv1.LabelClusterSet] = p.clusterSet
	}
	if s.maps == nil {
		s.maps = map[labelPair]map[string]string{}
	}
	s.maps[p] = m
	return m
}
