package prints

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/memberprint"
)

// decoded is object i as a metadata-only list decodes it: every string its own, the
// labels and annotations the hub writes on a slice, and the managed fields of its apply.
func decoded(i int) *metav1.PartialObjectMetadata {
	fields := make([]byte, 600)
	for j := range fields {
		fields[j] = 'f'
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace:         fmt.Sprintf("team-%02d", i%100),
		Name:              fmt.Sprintf("svc-%05d-cluster-%03d-abcde", i/4, i%4),
		ResourceVersion:   strconv.Itoa(100000000 + i),
		UID:               types.UID(fmt.Sprintf("6b1f3c5e-0000-4000-8000-%012d", i)),
		Generation:        1,
		CreationTimestamp: metav1.Now(),
		Labels: map[string]string{
			straitv1.LabelManagedBy:                     straitv1.ManagedByHub,
			straitv1.LabelClusterSet:                    fmt.Sprintf("strait-%s.%s", "system", "prod"),
			"kubernetes.io/service-name":                fmt.Sprintf("svc-%05d", i/4),
			"multicluster.kubernetes.io/source-cluster": fmt.Sprintf("cluster-%03d", i%4),
			"endpointslice.kubernetes.io/managed-by":    "strait-hub",
		},
		Annotations: map[string]string{straitv1.AnnotationDigest: fmt.Sprintf("%016x", i)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "strait-hub", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "discovery.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields}}},
	}}
}

func TestTheTransformKeepsWhatThePrintReads(t *testing.T) {
	transform := printedOnly()
	for i := range 3 {
		in := decoded(i)
		outAny, err := transform(in.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		out := outAny.(*metav1.PartialObjectMetadata)
		if memberprint.Of("EndpointSlice", out) != memberprint.Of("EndpointSlice", in) {
			t.Error("the fingerprint changed")
		}
		csIn, okIn := memberprint.Counted(in)
		csOut, okOut := memberprint.Counted(out)
		if csIn != csOut || okIn != okOut || !okOut {
			t.Errorf("counted in %q, %v; want %q, %v", csOut, okOut, csIn, okIn)
		}
		if key, _ := toolscache.MetaNamespaceKeyFunc(out); key != in.Namespace+"/"+in.Name {
			t.Errorf("store key %q", key)
		}
		if len(out.Labels) != 2 || len(out.Annotations) != 1 || out.UID != "" || len(out.ManagedFields) != 1 ||
			out.ManagedFields[0].FieldsV1 != nil || out.ManagedFields[0].APIVersion != "" {
			t.Errorf("kept more than the print reads: %+v", out.ObjectMeta)
		}
	}
	a, _ := transform(decoded(0))
	b, _ := transform(decoded(1))
	if fmt.Sprintf("%p", a.(*metav1.PartialObjectMetadata).Labels) != fmt.Sprintf("%p", b.(*metav1.PartialObjectMetadata).Labels) {
		t.Error("two objects of one ClusterSet do not share their labels")
	}
	// Without the hub's labels: none kept.
	c := decoded(2)
	c.Labels = map[string]string{"app": "x"}
	if out, _ := transform(c); out.(*metav1.PartialObjectMetadata).Labels != nil {
		t.Error("kept labels that say nothing to the print")
	}
}

// fakeList is a ListerWatcher that lists n objects (decoded) and then watches nothing.
func fakeList(n int) toolscache.ListerWatcher {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (apiruntime.Object, error) {
			list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]metav1.PartialObjectMetadata, n)}
			for i := range n {
				list.Items[i] = *decoded(i)
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil {
				return nil, errors.New("no streaming lists here")
			}
			return watch.NewFake(), nil
		},
	}
}

// TestWhatTheReporterHoldsAnObject measures the heap the reporter holds per object of
// a kind after its first list of 40,000 (what a member of a thousand-member ClusterSet
// with 10,000 exports holds of the three kinds together), through a reflector into the
// keeper as Run makes it; beside it, for comparison, an informer with the same
// transform (the informer's store keeps each stripped object).
func TestWhatTheReporterHoldsAnObject(t *testing.T) {
	if testing.Short() {
		t.Skip("lists 40,000 objects")
	}
	const n = 40000
	for _, tc := range []struct {
		name  string
		start func(ctx context.Context, k *Keeper) func() bool
		limit float64
	}{
		{"reflector into the keeper", func(ctx context.Context, k *Keeper) func() bool {
			store := &keeperStore{keeper: k, kind: "EndpointSlice", transform: printedOnly(), changed: func() {}}
			rf := toolscache.NewReflectorWithOptions(fakeList(n), &metav1.PartialObjectMetadata{}, store, toolscache.ReflectorOptions{})
			go rf.RunWithContext(ctx)
			return store.synced.Load
		}, 100},
		{"informer, stripped objects", func(ctx context.Context, k *Keeper) func() bool {
			inf := toolscache.NewSharedIndexInformer(fakeList(n), &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
			if err := inf.SetTransform(printedOnly()); err != nil {
				t.Fatal(err)
			}
			reg, err := inf.AddEventHandler(k.Handler("EndpointSlice", nil))
			if err != nil {
				t.Fatal(err)
			}
			go inf.RunWithContext(ctx)
			return reg.HasSynced
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := heap()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			k := NewKeeper()
			synced := tc.start(ctx, k)
			deadline := time.Now().Add(time.Minute)
			for !synced() {
				if time.Now().After(deadline) {
					t.Fatal("not synced")
				}
				time.Sleep(10 * time.Millisecond)
			}
			per := float64(heap()-before) / n
			t.Logf("%.0f bytes an object", per)
			if got, _ := k.Report(""); len(got) != len(memberprint.ReportedKinds()) || got[0].Count != n {
				t.Fatalf("report %v", got)
			}
			if tc.limit > 0 && per > tc.limit {
				t.Errorf("%.0f bytes an object, more than %.0f", per, tc.limit)
			}
			runtime.KeepAlive(k)
		})
	}
}

func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
