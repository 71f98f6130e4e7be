package members

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeServer stands in for an API server of ConfigMaps under a real client-go
// informer: the test changes its objects and says whether the informer's watch hears
// of it, or makes the watch expire so that the informer lists again.
type fakeServer struct {
	mu       sync.Mutex
	rv       int
	objs     map[string]*corev1.ConfigMap
	lists    int
	watchers chan *watch.FakeWatcher
}

func newFakeServer() *fakeServer {
	return &fakeServer{objs: map[string]*corev1.ConfigMap{}, watchers: make(chan *watch.FakeWatcher, 10)}
}

// set creates or changes an object: counts says whether it carries the label that
// makes it count. It returns the new state.
func (s *fakeServer) set(name string, counts bool) *corev1.ConfigMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: strconv.Itoa(s.rv)}}
	if counts {
		o.Labels = map[string]string{"print": "yes"}
	}
	s.objs[name] = o
	return o.DeepCopy()
}

// remove deletes an object and returns it as a watch's delete event carries it: at
// the resourceVersion of the delete.
func (s *fakeServer) remove(name string) *corev1.ConfigMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	o := s.objs[name].DeepCopy()
	delete(s.objs, name)
	o.ResourceVersion = strconv.Itoa(s.rv)
	return o
}

// print is what a list of the objects that count gives.
func (s *fakeServer) print() Print {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p Print
	for _, name := range slices.Sorted(maps.Keys(s.objs)) {
		if f, ok := testPrint("ConfigMap", s.objs[name]); ok {
			p.N++
			p.Sum += f
		}
	}
	return p
}

func (s *fakeServer) listWatch() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.lists++
			l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
			for _, name := range slices.Sorted(maps.Keys(s.objs)) {
				l.Items = append(l.Items, *s.objs[name].DeepCopy())
			}
			return l, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil {
				return nil, errors.New("no streaming lists here")
			}
			w := watch.NewFakeWithChanSize(100, false)
			s.watchers <- w
			return w, nil
		},
	}
}

func (s *fakeServer) listCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// testPrint counts the objects labelled print=yes, by name and resourceVersion.
func testPrint(_ string, o client.Object) (uint64, bool) {
	if o.GetLabels()["print"] != "yes" {
		return 0, false
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(o.GetNamespace() + "/" + o.GetName() + "@" + o.GetResourceVersion()))
	return h.Sum64(), true
}

// A kind's print, kept from a real informer's events, equals a list's after the
// initial list, adds, updates, a label stripped and deletes heard on the watch, and
// after changes and a delete the watch missed, which the informer learns from a
// relist (an update, and a DeletedFinalStateUnknown).
func TestPrintsFollowTheInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newFakeServer()
	s.set("a", true)
	s.set("b", true)
	s.set("c", false)

	inf := toolscache.NewSharedIndexInformer(s.listWatch(), &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	p := NewPrints(testPrint, "ConfigMap")
	if _, ok := p.Print("Secret"); ok {
		t.Error("a print of a kind not kept")
	}
	var mu sync.Mutex
	unknown := 0
	inner := p.Handler("ConfigMap")
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { inner.OnAdd(obj, false) },
		UpdateFunc: inner.OnUpdate,
		DeleteFunc: func(obj any) {
			if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				mu.Lock()
				unknown++
				mu.Unlock()
			}
			inner.OnDelete(obj)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.setSynced("ConfigMap", reg.HasSynced)
	if _, ok := p.Print("ConfigMap"); ok {
		t.Error("a print before the informer's first list")
	}
	go inf.RunWithContext(ctx)

	equal := func(step string) {
		t.Helper()
		want := s.print()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, ok := p.Print("ConfigMap")
			if ok && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: print %+v (ok %v), a list gives %+v", step, got, ok, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	equal("the initial list")
	if got, _ := p.Print("ConfigMap"); got.N != 2 {
		t.Fatalf("the initial list: %d objects count, want 2", got.N)
	}

	w := <-s.watchers
	w.Modify(s.set("a", true))
	equal("an update")
	w.Add(s.set("d", true))
	equal("an add")
	w.Modify(s.set("c", true))
	equal("a label added")
	w.Modify(s.set("d", false))
	equal("a label stripped")
	w.Delete(s.remove("b"))
	equal("a delete (the event at the delete's resourceVersion)")

	// Changes the watch misses, then the watch expires: the informer lists again.
	lists := s.listCount()
	s.set("c", true)
	s.remove("a")
	s.set("e", true)
	w.Error(&apierrors.NewResourceExpired("too old").ErrStatus)
	equal("a relist")
	if s.listCount() == lists {
		t.Error("the informer did not list again")
	}
	mu.Lock()
	defer mu.Unlock()
	if unknown == 0 {
		t.Error("the relist took out no object as DeletedFinalStateUnknown")
	}
}

// The handler takes out what an object put in by its name, whatever the delete
// carries: a DeletedFinalStateUnknown without its object, or an object at another
// resourceVersion.
func TestPrintsDeleteByName(t *testing.T) {
	p := NewPrints(testPrint, "ConfigMap")
	h := p.Handler("ConfigMap")
	if p.Handler("Secret") != nil {
		t.Error("a handler for a kind not kept")
	}
	obj := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv,
			Labels: map[string]string{"print": "yes"}}}
	}
	h.OnAdd(obj("a", "1"), true)
	h.OnAdd(obj("b", "2"), true)
	h.OnDelete(obj("a", "9"))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/b"})
	h.OnDelete("no object") // nothing to take out
	if got, ok := p.Print("ConfigMap"); !ok || got != (Print{}) {
		t.Errorf("after every delete: %+v (ok %v), want none", got, ok)
	}
}

// TestKeepOthersManagers: the informers keep, of an object's managed fields, only who
// else owns fields of the object itself, without the fields.
func TestKeepOthersManagers(t *testing.T) {
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}
	o := &metav1.PartialObjectMetadata{}
	o.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "strait-hub", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: fields},
		{Manager: "strait-hub", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: fields},
		{Manager: "strait-agent", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: fields},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields},
	})
	if _, err := KeepOthersManagers("strait-hub")(o); err != nil {
		t.Fatal(err)
	}
	want := []metav1.ManagedFieldsEntry{{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate}}
	if got := o.GetManagedFields(); !reflect.DeepEqual(got, want) {
		t.Errorf("kept %+v, want %+v", got, want)
	}
	hubOnly := &metav1.PartialObjectMetadata{}
	hubOnly.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "strait-hub", FieldsV1: fields}})
	if _, err := KeepOthersManagers("strait-hub")(hubOnly); err != nil {
		t.Fatal(err)
	}
	if got := hubOnly.GetManagedFields(); len(got) != 0 {
		t.Errorf("an object the hub alone wrote kept %+v", got)
	}
}
