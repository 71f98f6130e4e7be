package clustersetip

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// derivedStore is the reflector's store of the derived Services: it turns each Service
// into its facts as it is decoded (Transformer, also while the first list streams) and
// keeps them in the Writer; no typed object is kept. Every change marks the Writer
// dirty.
type derivedStore struct{ w *Writer }

var _ toolscache.TransformingStore = derivedStore{}

// notDerived is what a Service that is not a derived one leaves: its name, which a
// derived one of the same name had (the label taken off, say).
type notDerived struct{ key types.NamespacedName }

// facts is obj's Derived or notDerived.
func facts(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj // already facts: the reflector hands on what Transformer made
	}
	if d, ok := DerivedOf(s); ok {
		return d
	}
	return notDerived{types.NamespacedName{Namespace: s.Namespace, Name: s.Name}}
}

// set keeps obj's facts; delete forgets them.
func (s derivedStore) set(obj any, delete bool) {
	switch f := facts(obj).(type) {
	case Derived:
		if delete {
			s.forget(f.Key)
		} else {
			s.w.derived[f.Key] = f
		}
	case notDerived:
		s.forget(f.key)
	}
}

func (s derivedStore) forget(k types.NamespacedName) { delete(s.w.derived, k) }

func (s derivedStore) change(f func()) error {
	s.w.mu.Lock()
	f()
	s.w.mu.Unlock()
	s.w.markDirty()
	return nil
}

// Add implements toolscache.ReflectorStore.
func (s derivedStore) Add(obj any) error { return s.change(func() { s.set(obj, false) }) }

// Update implements toolscache.ReflectorStore.
func (s derivedStore) Update(obj any) error { return s.change(func() { s.set(obj, false) }) }

// Delete implements toolscache.ReflectorStore.
func (s derivedStore) Delete(obj any) error { return s.change(func() { s.set(obj, true) }) }

// Replace implements toolscache.ReflectorStore: the facts become list's.
func (s derivedStore) Replace(list []any, _ string) error {
	return s.change(func() {
		clear(s.w.derived)
		for _, obj := range list {
			s.set(obj, false)
		}
		s.w.synced = true
	})
}

// Resync implements toolscache.ReflectorStore; there is nothing to resync.
func (s derivedStore) Resync() error { return nil }

// Transformer implements toolscache.TransformingStore: Services become facts as they
// are decoded.
func (s derivedStore) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) { return facts(obj), nil }
}
