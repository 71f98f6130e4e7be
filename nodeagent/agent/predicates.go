package agent

import (
	"bytes"
	"maps"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
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

// gatewayClaimChanged passes Gateway events that change who claims to be active: this
// node's own Gateway changing state, or another one turning active. Heartbeats and
// health, which come every pass, pass nothing.
func gatewayClaimChanged(self string) predicate.Funcs {
	matters := func(o client.Object) bool {
		g, ok := o.(*straitv1.Gateway)
		return !ok || g.Name == self || g.Spec.HAState == straitv1.HAActive
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return matters(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return e.Object.GetName() == self },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*straitv1.Gateway)
			n, ok2 := e.ObjectNew.(*straitv1.Gateway)
			if !ok1 || !ok2 {
				return true
			}
			return o.Spec.HAState != n.Spec.HAState && matters(n)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
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
