package agent

import (
	"bytes"
	"maps"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// nodeChanged passes Node updates that matter to the data plane (labels, addresses,
// annotations), not status heartbeats.
func nodeChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
			!slices.Equal(o.Status.Addresses, n.Status.Addresses)
	}}
}

// leaseHolderChanged passes Lease updates that change the holder, not the renewals
// that come every retry period.
func leaseHolderChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*coordinationv1.Lease)
		n, ok2 := e.ObjectNew.(*coordinationv1.Lease)
		if !ok1 || !ok2 {
			return true
		}
		return holder(o) != holder(n)
	}}
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func toolsHandler(fn func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    fn,
		UpdateFunc: func(_, n any) { fn(n) },
		DeleteFunc: fn,
	}
}

// secretDataChanged passes creations, deletions and updates that change a Secret's data
// (not the metadata-only updates of other controllers).
func secretDataChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Secret)
		n, ok2 := e.ObjectNew.(*corev1.Secret)
		if !ok1 || !ok2 {
			return true
		}
		return !maps.EqualFunc(o.Data, n.Data, bytes.Equal)
	}}
}
