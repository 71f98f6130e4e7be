package prints

import (
	"sync"
	"time"
	"unique"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/kubewatch"
)

// watchedKinds are the kinds of memberprint.ReportedKinds as metadata-only objects:
// the informers receive and keep nothing of the objects but their metadata.
func watchedKinds() map[string]*metav1.PartialObjectMetadata {
	gvks := map[string]schema.GroupVersionKind{
		"EndpointSlice": discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		"Service":       schema.GroupVersion{Version: "v1"}.WithKind("Service"),
		"ServiceImport": mcsv1.SchemeGroupVersion.WithKind("ServiceImport"),
	}
	out := make(map[string]*metav1.PartialObjectMetadata, len(gvks))
	for kind, gvk := range gvks {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		out[kind] = o
	}
	return out
}

// newInformer is the cache's informer: it follows an API server that comes back within
// seconds (kubewatch), and it keeps no index. The informers feed the keeper's events
// and nothing reads the cache's objects, so controller-runtime's namespace index would
// only cost a set entry per object.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, _ toolscache.Indexers) toolscache.SharedIndexInformer {
	return kubewatch.NewSharedIndexInformer(lw, obj, resync, toolscache.Indexers{})
}

// printedOnly is the transform of the watched kinds' informers: of an object it keeps
// what Keeper reads, its namespace, name, resourceVersion and the two labels that say
// which ClusterSet's print it counts in, and nothing else (no managed fields, owner
// references, annotations, UID or timestamps). Namespaces are interned, and objects
// with the same two labels share one map of them: the informer holds some 40,000 such
// objects at a thousand members with ten thousand exports.
func printedOnly() toolscache.TransformFunc {
	var maps sharedLabels
	return func(in any) (any, error) {
		o, ok := in.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, nil
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace:       unique.Make(o.Namespace).Value(),
			Name:            o.Name,
			ResourceVersion: o.ResourceVersion,
			Labels:          maps.of(o.Labels),
		}}, nil
	}
}

// sharedLabels hands out one map a pair of values of the two labels. Nobody writes to
// an informer's objects (controller-runtime's reader hands out deep copies), so they
// may share the map. A pair stays for the life of the process: there are as many as
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

// withoutManagedFields is the Membership informer's transform: the managed fields would
// be most of what it holds, and nothing here reads them.
func withoutManagedFields(in any) (any, error) {
	if o, ok := in.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	return in, nil
}
