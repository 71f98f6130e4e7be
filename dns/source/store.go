package source

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
)

// kind is one of the kinds of objects the source watches.
type kind int

const (
	kindImport kind = iota
	kindSlice
	kindPeer
	kindMembership
	numKinds
)

// state is what the answers depend on, kept object by object: the resolver entries of
// the imported services, and the Peers and the Membership as records. There is no other
// copy of the services: the entries map is handed to the snapshot built from it, and a
// change after that works on a copy of the map (the entries themselves are immutable and
// shared). It is safe for concurrent use.
type state struct {
	in *interner
	// pool makes the entries, sharing what their sources have in common.
	pool *resolver.Pool
	// onChange, when not nil, is called after every change that alters the answers.
	onChange func()

	mu sync.Mutex
	// entries of the imported services, by the ServiceImport's name and namespace
	// (Kubernetes names are lower case, so these are the resolver's keys too). Their
	// sources are the slices labelled with the service's name, keyed by slice name,
	// ordered by cluster and name.
	entries map[resolver.ServiceKey]*resolver.Entry
	// shared says that entries belongs to a snapshot: copy it before changing it.
	shared bool
	// orphans are the sources of services that are not imported (yet, or any more).
	orphans     map[resolver.ServiceKey][]resolver.ClusterSource
	peers       map[objectKey]*peerRecord
	memberships map[objectKey]*membershipRecord
	synced      [numKinds]bool
}

func newState(in *interner, onChange func()) *state {
	return &state{in: in, pool: resolver.NewPool(), onChange: onChange, entries: map[resolver.ServiceKey]*resolver.Entry{},
		orphans: map[resolver.ServiceKey][]resolver.ClusterSource{}, peers: map[objectKey]*peerRecord{},
		memberships: map[objectKey]*membershipRecord{}}
}

// build is the snapshot of the state now; from here on the state's entries map belongs
// to it.
func (s *state) build(namespace string, o Overrides, serial uint32) *resolver.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memberships[objectKey{namespace, straitv1.MembershipName}]
	connected := make(map[string]bool, len(s.peers))
	for _, p := range s.peers {
		if p.namespace == namespace {
			connected[p.cluster] = p.connected
		}
	}
	s.shared = true
	return resolver.Assemble(config(m, o, serial), s.entries, func(c string) bool { return connected[c] })
}

// isSynced says whether every kind had its first full list.
func (s *state) isSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ok := range s.synced {
		if !ok {
			return false
		}
	}
	return true
}

// op is what happened to an object.
type op int

const (
	opAdd op = iota
	opUpdate
	opDelete
)

// apply applies what happened to the object whose record is rec.
func (s *state) apply(rec any, o op) error {
	s.mu.Lock()
	changed, err := s.applyLocked(rec, o)
	s.mu.Unlock()
	if changed && s.onChange != nil {
		s.onChange()
	}
	return err
}

func (s *state) applyLocked(rec any, o op) (bool, error) {
	del := o == opDelete
	switch r := rec.(type) {
	case *importRecord:
		if del {
			return s.deleteImport(resolver.ServiceKey{Name: r.name, Namespace: r.namespace}), nil
		}
		return s.setImport(r), nil
	case *sliceRecord:
		switch {
		case del || o == opUpdate && r.src.Cluster == "":
			return s.deleteSlice(r.objectKey, r.service), nil
		case r.src.Cluster == "":
			return false, nil
		}
		return s.setSlice(r, o == opUpdate), nil
	case *peerRecord:
		old, ok := s.peers[r.objectKey]
		if del {
			delete(s.peers, r.objectKey)
			return ok, nil
		}
		s.peers[r.objectKey] = r
		return !ok || *old != *r, nil
	case *membershipRecord:
		old, ok := s.memberships[r.objectKey]
		if del {
			delete(s.memberships, r.objectKey)
			return ok, nil
		}
		s.memberships[r.objectKey] = r
		return !ok || old.clusterID != r.clusterID || !sameDNS(old.dns, r.dns), nil
	}
	return false, fmt.Errorf("unexpected object %T", rec)
}

func sameDNS(a, b straitv1.DNSSpec) bool {
	return a.TTLSeconds == b.TTLSeconds && a.DisableClusterNames == b.DisableClusterNames && slices.Equal(a.ExtraZones, b.ExtraZones) &&
		a.ServiceAnswer == b.ServiceAnswer
}

// replace makes recs the only objects of kind k, and marks k synced.
func (s *state) replace(k kind, recs []any) error {
	s.mu.Lock()
	changed := !s.synced[k]
	s.synced[k] = true
	// keep names the objects listed, with the service of each slice.
	keep := make(map[objectKey]string, len(recs))
	var errs []error
	for _, rec := range recs {
		c, err := s.applyLocked(rec, opAdd)
		changed = changed || c
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k, svc := keyOf(rec)
		keep[k] = svc
	}
	changed = s.dropExcept(k, keep) || changed
	s.mu.Unlock()
	if changed && s.onChange != nil {
		s.onChange()
	}
	if len(errs) > 0 {
		return fmt.Errorf("replacing %d objects: %d failed, first: %w", len(recs), len(errs), errs[0])
	}
	return nil
}

// keyOf is the key of the object rec is the record of, and for a slice its service.
func keyOf(rec any) (objectKey, string) {
	switch r := rec.(type) {
	case *importRecord:
		return r.objectKey, ""
	case *sliceRecord:
		return r.objectKey, r.service
	case *peerRecord:
		return r.objectKey, ""
	case *membershipRecord:
		return r.objectKey, ""
	}
	return objectKey{}, ""
}

// dropExcept deletes the objects of kind k that keep does not name, and the slices
// under another service than keep's.
func (s *state) dropExcept(k kind, keep map[objectKey]string) bool {
	changed := false
	has := func(key objectKey) bool {
		_, ok := keep[key]
		return ok
	}
	switch k {
	case kindImport:
		for key := range s.entries {
			if !has(objectKey{key.Namespace, key.Name}) {
				changed = s.deleteImport(key) || changed
			}
		}
	case kindSlice:
		type stale struct {
			svc  resolver.ServiceKey
			name string
		}
		var gone []stale
		s.eachSource(func(svc resolver.ServiceKey, src *resolver.ClusterSource) {
			name := sliceName(svc.Name, src.Key)
			if listed, ok := keep[objectKey{svc.Namespace, name}]; !ok || listed != svc.Name {
				gone = append(gone, stale{svc, name})
			}
		})
		for _, g := range gone {
			changed = s.removeSource(g.svc, g.name) || changed
		}
	case kindPeer:
		for key := range s.peers {
			if !has(key) {
				delete(s.peers, key)
				changed = true
			}
		}
	case kindMembership:
		for key := range s.memberships {
			if !has(key) {
				delete(s.memberships, key)
				changed = true
			}
		}
	}
	return changed
}

// eachSource calls f with every source, of imported services or not.
func (s *state) eachSource(f func(resolver.ServiceKey, *resolver.ClusterSource)) {
	for key, e := range s.entries {
		srcs := e.Service().Sources
		for i := range srcs {
			f(key, &srcs[i])
		}
	}
	for key, srcs := range s.orphans {
		for i := range srcs {
			f(key, &srcs[i])
		}
	}
}

// sources are the sources of the service key, imported or not.
func (s *state) sources(key resolver.ServiceKey) []resolver.ClusterSource {
	if e := s.entries[key]; e != nil {
		return e.Service().Sources
	}
	return s.orphans[key]
}

// setSources makes srcs the sources of the service key; srcs is not changed afterwards.
func (s *state) setSources(key resolver.ServiceKey, srcs []resolver.ClusterSource) {
	e := s.entries[key]
	if e == nil {
		if len(srcs) == 0 {
			s.dropOrphans(key)
		} else {
			s.orphans[key] = srcs
		}
		return
	}
	svc := e.Service()
	svc.Sources = publishNotReady(srcs, svc.Headless)
	s.putEntry(key, s.pool.NewEntry(svc, e))
}

// putEntry sets (or, with e nil, deletes) the entry of key, copying the map first when
// a snapshot holds it.
func (s *state) putEntry(key resolver.ServiceKey, e *resolver.Entry) {
	if s.shared {
		s.entries = maps.Clone(s.entries)
		s.shared = false
	}
	if e == nil {
		delete(s.entries, key)
		return
	}
	s.entries[key] = e
}

// publishNotReady is srcs with PublishNotReady set where the hub means it: a headless
// service's slice that lists a not-ready endpoint (the hub lists those only for
// services with publishNotReadyAddresses). srcs itself when nothing changes.
func publishNotReady(srcs []resolver.ClusterSource, headless bool) []resolver.ClusterSource {
	out := srcs
	for i := range srcs {
		if pnr := headless && notReady(&srcs[i]); pnr != srcs[i].PublishNotReady {
			if &out[0] == &srcs[0] {
				out = slices.Clone(srcs)
			}
			out[i].PublishNotReady = pnr
		}
	}
	return out
}

func (s *state) setImport(r *importRecord) bool {
	key := resolver.ServiceKey{Name: r.name, Namespace: r.namespace}
	e := s.entries[key]
	var srcs []resolver.ClusterSource
	if e != nil {
		old := e.Service()
		if old.Headless == r.headless && slices.Equal(old.Ports, r.ports) && slices.Equal(old.IPs, r.ips) {
			return false
		}
		srcs = old.Sources
	} else {
		srcs = s.orphans[key]
		s.dropOrphans(key)
	}
	svc := resolver.Service{Namespace: r.namespace, Name: r.name, Headless: r.headless, Ports: r.ports, IPs: r.ips,
		Sources: publishNotReady(srcs, r.headless)}
	s.putEntry(key, s.pool.NewEntry(svc, e))
	return true
}

func (s *state) deleteImport(key resolver.ServiceKey) bool {
	e := s.entries[key]
	if e == nil {
		return false
	}
	if srcs := e.Service().Sources; len(srcs) > 0 {
		s.orphans[key] = srcs
	}
	s.putEntry(key, nil)
	return true
}

// setSlice adds or (update) updates a slice. An updated slice that is not under its
// service moved there (its service-name label changed): it leaves the old one. A slice
// added anew is not looked for elsewhere; a full list (replace) settles any slice that
// moved while the watch was down.
func (s *state) setSlice(r *sliceRecord, update bool) bool {
	key := resolver.ServiceKey{Name: r.service, Namespace: r.namespace}
	srcs := s.sources(key)
	i := slices.IndexFunc(srcs, func(c resolver.ClusterSource) bool { return c.Key == r.src.Key })
	if i >= 0 {
		old := &srcs[i]
		if old.Cluster == r.src.Cluster && slices.Equal(old.Ports, r.src.Ports) && slices.Equal(old.Endpoints, r.src.Endpoints) {
			return false
		}
		srcs = without(srcs, i)
	} else if update {
		s.deleteSlice(r.objectKey, "")
		srcs = s.sources(key)
	}
	at, _ := slices.BinarySearchFunc(srcs, &r.src, compareSources)
	s.setSources(key, with(srcs, at, r.src))
	return true
}

// without is a copy of srcs without srcs[i], of just the length needed.
func without(srcs []resolver.ClusterSource, i int) []resolver.ClusterSource {
	if len(srcs) == 1 {
		return nil
	}
	out := make([]resolver.ClusterSource, 0, len(srcs)-1)
	return append(append(out, srcs[:i]...), srcs[i+1:]...)
}

// with is a copy of srcs with src inserted at i, of just the length needed.
func with(srcs []resolver.ClusterSource, i int, src resolver.ClusterSource) []resolver.ClusterSource {
	out := make([]resolver.ClusterSource, 0, len(srcs)+1)
	return append(append(append(out, srcs[:i]...), src), srcs[i:]...)
}

// dropOrphans forgets the sources of key that is not imported; a map that empties is
// made anew, since a map does not give back the room it grew to (it does, for instance,
// when every slice is listed before its import).
func (s *state) dropOrphans(key resolver.ServiceKey) {
	delete(s.orphans, key)
	if len(s.orphans) == 0 {
		s.orphans = map[resolver.ServiceKey][]resolver.ClusterSource{}
	}
}

func compareSources(a resolver.ClusterSource, b *resolver.ClusterSource) int {
	if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// deleteSlice removes the slice named k from the service named service, or, when it is
// not there (or service is empty), from whichever service of its namespace has it.
func (s *state) deleteSlice(k objectKey, service string) bool {
	if service != "" && s.removeSource(resolver.ServiceKey{Name: service, Namespace: k.namespace}, k.name) {
		return true
	}
	var found []resolver.ServiceKey
	s.eachSource(func(svc resolver.ServiceKey, src *resolver.ClusterSource) {
		if svc.Namespace == k.namespace && isSlice(svc.Name, src.Key, k.name) {
			found = append(found, svc)
		}
	})
	for _, svc := range found {
		s.removeSource(svc, k.name)
	}
	return len(found) > 0
}

func (s *state) removeSource(key resolver.ServiceKey, name string) bool {
	srcs := s.sources(key)
	i := slices.IndexFunc(srcs, func(c resolver.ClusterSource) bool { return isSlice(key.Name, c.Key, name) })
	if i < 0 {
		return false
	}
	s.setSources(key, without(srcs, i))
	return true
}

// kindStore is the reflector's store for one kind: it turns each object into its record
// as it arrives (also in the reflector's own store while it streams the first list, by
// way of Transformer) and applies it to the state; no typed object is kept.
type kindStore struct {
	s    *state
	kind kind
	// onError, when not nil, is told about objects that could not be taken in.
	onError func(error)
}

var _ toolscache.TransformingStore = kindStore{}

func (k kindStore) record(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	return k.s.in.record(obj)
}

func (k kindStore) report(err error) error {
	if err != nil && k.onError != nil {
		k.onError(err)
	}
	return err
}

// Add implements toolscache.ReflectorStore.
func (k kindStore) Add(obj any) error { return k.report(k.s.apply(k.record(obj), opAdd)) }

// Update implements toolscache.ReflectorStore.
func (k kindStore) Update(obj any) error { return k.report(k.s.apply(k.record(obj), opUpdate)) }

// Delete implements toolscache.ReflectorStore.
func (k kindStore) Delete(obj any) error { return k.report(k.s.apply(k.record(obj), opDelete)) }

// Replace implements toolscache.ReflectorStore.
func (k kindStore) Replace(list []any, _ string) error {
	recs := make([]any, len(list))
	for i, obj := range list {
		recs[i] = k.record(obj)
	}
	return k.report(k.s.replace(k.kind, recs))
}

// Resync implements toolscache.ReflectorStore; there is nothing to resync.
func (k kindStore) Resync() error { return nil }

// Transformer implements toolscache.TransformingStore: objects become records as they
// are decoded.
func (k kindStore) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) { return k.record(obj), nil }
}
