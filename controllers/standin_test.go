package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/controllers/members"
)

// StandIns are members the hub reaches through in-memory stand-ins instead of API
// servers, for BenchmarkExportToImportWithStandIns, where 255 API servers do not fit on
// one machine. Each stand-in keeps its objects in a memMember and answers as a member
// would, at a cost no lower than a real member's:
//
//   - every request (the probe, the kube-system namespace, applies, status applies,
//     gets, lists and deletes through the member's direct client) waits the latency
//     set (SetLatency), which the benchmark measures on its real members; the hub's
//     reads from informers do not wait, as they do not on a real member;
//   - every request body is encoded and decoded again, as the client encodes the
//     request and decodes the answer;
//   - every write of a watched kind comes back to the hub as the member's informer would
//     hand it on (memberChanged), decoded from its encoding, after the write, in order,
//     from a goroutine of the stand-in's own.
//
// What a real member costs the hub that a stand-in does not: its informers' lists,
// deep copies and stores (the echo is decoded but not stored), and TLS.
type StandIns struct {
	latency atomic.Int64 // time.Duration
	// imported is told when the status of a ServiceImport has been written to a
	// stand-in: the hub's write of that import has reached the member.
	imported func(cluster, name string, at time.Time)
	// statuses are the ServiceImport statuses the stand-ins were written.
	statuses *importStatuses
	// down are the clusters whose stand-ins answer no request (SetDown); refusing, those
	// that answer reads and refuse writes (SetRefusing).
	down, refusing sync.Map // string -> bool
}

// SetDown makes a stand-in fail every request from now on, as a member that went away.
func (s *StandIns) SetDown(cluster string, down bool) { s.down.Store(cluster, down) }

// SetRefusing makes a stand-in refuse every write from now on and still answer reads
// (its probe too), as a member that took the hub's rights away.
func (s *StandIns) SetRefusing(cluster string, refusing bool) { s.refusing.Store(cluster, refusing) }

// SetLatency sets the wait of every request to a stand-in from now on.
func (s *StandIns) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// UseStandIns makes r reach the clusters named through stand-ins (their kubeconfig
// Secrets are still read, and must parse) until ctx ends. A stand-in's kube-system
// namespace has the UID "standin-<cluster>". imported is told when a ServiceImport's
// status was written to a stand-in.
func (r *ClusterSetReconciler) UseStandIns(ctx context.Context, clusters []string, imported func(cluster, name string, at time.Time)) *StandIns {
	s := &StandIns{imported: imported, statuses: newImportStatuses()}
	named := map[string]bool{}
	for _, name := range clusters {
		named[name] = true
	}
	var mu sync.Mutex
	conns := map[members.Key]*members.Member{}
	r.standIns = func(key members.Key) *members.Member {
		if !named[key.Cluster] {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if conns[key] == nil {
			conns[key] = s.newStandIn(ctx, r, key)
		}
		return conns[key]
	}
	return s
}

// standIn is one member's API server as the hub's direct client meets it.
type standIn struct {
	*memMember // the objects, and the calls the hub does not make (they panic)
	set        *StandIns
	key        members.Key
	uid        types.UID
	echoes     chan echo
	done       <-chan struct{}
}

// echo is a change as the member's informer hands it on.
type echo struct {
	obj     client.Object
	deleted bool
}

func (s *StandIns) newStandIn(ctx context.Context, r *ClusterSetReconciler, key members.Key) *members.Member {
	si := &standIn{memMember: newMemMember(key, s.statuses), set: s, key: key, uid: types.UID("standin-" + key.Cluster),
		echoes: make(chan echo, 1024), done: ctx.Done()}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-si.echoes:
				r.memberChanged(key, nil, e.obj, e.deleted)
			}
		}
	}()
	return members.NewStandIn(key, si, si.memMember, si.prints)
}

// send is a request's round trip: its body encoded as the client encodes it and decoded
// as the answer is, and the wait. It returns the encoding.
func (s *standIn) send(ctx context.Context, body any) ([]byte, error) {
	if down, _ := s.set.down.Load(s.key.Cluster); down == true {
		return nil, fmt.Errorf("request to %s: connection refused", s.key)
	}
	if refusing, _ := s.set.refusing.Load(s.key.Cluster); refusing == true && body != nil {
		return nil, apierrors.NewForbidden(schema.GroupResource{}, s.key.Cluster, errors.New("the hub may not write here"))
	}
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding the request to %s: %w", s.key, err)
		}
		answer := map[string]any{}
		if err := json.Unmarshal(data, &answer); err != nil {
			return nil, fmt.Errorf("decoding the answer of %s: %w", s.key, err)
		}
	}
	t := time.NewTimer(time.Duration(s.set.latency.Load()))
	defer t.Stop()
	select {
	case <-t.C:
		return data, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("request to %s: %w", s.key, ctx.Err())
	}
}

func (s *standIn) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, err := s.send(ctx, nil); err != nil {
		return err
	}
	if err := s.memMember.Get(ctx, k, obj, opts...); err != nil {
		return err
	}
	if ns, ok := obj.(*corev1.Namespace); ok && k.Name == metav1.NamespaceSystem {
		ns.Name, ns.UID = k.Name, s.uid
	}
	return nil
}

func (s *standIn) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, err := s.send(ctx, nil); err != nil {
		return err
	}
	return s.memMember.List(ctx, list, opts...)
}

func (s *standIn) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, err := s.send(ctx, obj); err != nil {
		return err
	}
	return s.memMember.Create(ctx, obj, opts...)
}

func (s *standIn) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, err := s.send(ctx, nil); err != nil {
		return err
	}
	if err := s.memMember.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	if kindOf(obj) != "Secret" {
		s.hand(echo{obj: obj.DeepCopyObject().(client.Object), deleted: true})
	}
	return nil
}

func (s *standIn) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	data, err := s.send(ctx, obj)
	if err != nil {
		return err
	}
	if err := s.memMember.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	return s.echo(obj, data)
}

func (s *standIn) Status() client.SubResourceWriter { return standInStatus{s: s} }

type standInStatus struct {
	client.SubResourceWriter // nil: the hub only applies status
	s                        *standIn
}

func (st standInStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s := st.s
	data, err := s.send(ctx, obj)
	if err != nil {
		return err
	}
	if err := s.memMember.Status().Apply(ctx, obj, opts...); err != nil {
		return err
	}
	if u, ok := obj.(unstructuredApply); ok && u.GetKind() == "ServiceImport" && s.set.imported != nil {
		s.set.imported(s.key.Cluster, u.GetName(), time.Now())
	}
	return s.echo(obj, data)
}

// echo hands the written object on to the hub as the member's informer would: decoded
// from data, with the labels and the resourceVersion the member holds. Secrets are not
// watched.
func (s *standIn) echo(obj runtime.ApplyConfiguration, data []byte) error {
	u, ok := obj.(unstructuredApply)
	if !ok || u.GetKind() == "Secret" {
		return nil
	}
	apiVersion, _ := u.UnstructuredContent()["apiVersion"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return fmt.Errorf("echo of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	ro, err := s.scheme.New(gv.WithKind(u.GetKind()))
	if err != nil {
		return fmt.Errorf("echo of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	o, ok := ro.(client.Object)
	if !ok {
		return fmt.Errorf("echo of %s: %T is no object", u.GetKind(), ro)
	}
	if err := json.Unmarshal(data, o); err != nil {
		return fmt.Errorf("echo of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // informers' objects carry none
	s.mu.Lock()
	o.SetLabels(s.labels)
	s.mu.Unlock()
	if v, ok := obj.(interface{ GetResourceVersion() string }); ok {
		o.SetResourceVersion(v.GetResourceVersion()) // the member's answer (memMember.store)
	}
	s.hand(echo{obj: o})
	return nil
}

// hand queues an echo for the hub, unless the stand-ins are done.
func (s *standIn) hand(e echo) {
	select {
	case s.echoes <- e:
	case <-s.done:
	}
}
