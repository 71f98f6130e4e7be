package controllers

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/connections"
	"github.com/straitnet/strait/plan"
)

// relevance is what, in members, can change a ClusterSet's plan: its exported services
// (declared, or made in members under the MemberExports policy) and the Services its
// clusters' gateways are reached through (endpoint type LoadBalancer: a cloud writes
// their address some time after the commit). Changes to other Services and
// EndpointSlices do not wake the reconciler.
type relevance struct {
	mu            sync.RWMutex
	services      map[types.NamespacedName]bool // exported, or the gateways' LoadBalancer Service
	memberExports bool
}

func (r *ClusterSetReconciler) relevanceFor(cs types.NamespacedName) *relevance {
	if v, ok := r.relevance.Load(cs); ok {
		return v.(*relevance) // every member event asks: no new relevance each time
	}
	v, _ := r.relevance.LoadOrStore(cs, &relevance{})
	return v.(*relevance)
}

func (rel *relevance) update(obj *straitv1.ClusterSet, observed plan.Observed) {
	services := declaredExports(obj)
	for i := range obj.Spec.Clusters {
		if svc := endpointService(&obj.Spec.Clusters[i]); svc != nil {
			services[*svc] = true
		}
	}
	for _, f := range observed {
		for i := range f.ServiceExports {
			se := &f.ServiceExports[i]
			services[types.NamespacedName{Namespace: se.Namespace, Name: se.Name}] = true
		}
	}
	rel.mu.Lock()
	rel.services, rel.memberExports = services, obj.Spec.ExportPolicy == straitv1.ExportPolicyMemberExports
	rel.mu.Unlock()
}

func (rel *relevance) service(k types.NamespacedName) bool {
	rel.mu.RLock()
	defer rel.mu.RUnlock()
	return rel.services == nil || rel.services[k]
}

func (rel *relevance) anyExport() bool {
	rel.mu.RLock()
	defer rel.mu.RUnlock()
	return rel.services == nil || rel.memberExports
}

// memberChanged is called by the member informers and probes. It notes what the
// member's facts hold (factsChanged), and enqueues the ClusterSet when the change can
// matter: health changes, gateways, exported services and their slices, ServiceExports
// people make, a connection's state, and objects the hub wrote that someone else changed or
// deleted (echoes of the hub's own writes are recognised and dropped).
func (r *ClusterSetReconciler) memberChanged(key members.Key, old, obj client.Object, deleted bool) {
	r.factsChanged(key, old, obj)
	if se, ok := obj.(*mcsv1.ServiceExport); ok && old == nil && !deleted {
		r.metrics.exportArrived(plan.ClusterSetLabel(key.ClusterSet), se.Namespace+"/"+se.Name, time.Now())
	}
	if m, ok := obj.(*straitv1.Membership); ok && !deleted && r.reportChanged(key, old, m) {
		r.enqueue(key.ClusterSet)
		return
	}
	if obj == nil || connectionsChanged(old, obj) || r.relevantChange(key, obj, deleted) {
		r.enqueue(key.ClusterSet)
	}
}

func (r *ClusterSetReconciler) relevantChange(key members.Key, obj client.Object, deleted bool) bool {
	if obj.GetLabels()[straitv1.LabelClusterSet] == plan.ClusterSetLabel(key.ClusterSet) {
		t := r.appliedFor(key)
		if t.isOwnWrite(keyOf(kindOf(obj), obj), obj, deleted) {
			return false
		}
		t.changedByOthers()
		return true
	}
	switch o := obj.(type) {
	case *straitv1.Gateway:
		return true
	case *discoveryv1.EndpointSlice:
		if o.Labels[discoveryv1.LabelManagedBy] == plan.EndpointSliceManagedBy {
			return false
		}
	}
	return r.relevanceFor(key.ClusterSet).input(obj)
}

// input says whether the plan reads obj, a Service, EndpointSlice or ServiceExport of
// a member (readFacts): an exported Service or the Service a cluster's gateways are
// reached through, a slice of one, or a ServiceExport that counts (any, under the
// MemberExports policy).
func (rel *relevance) input(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.Service:
		return rel.service(types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	case *discoveryv1.EndpointSlice:
		svc := o.Labels[discoveryv1.LabelServiceName]
		return svc != "" && rel.service(types.NamespacedName{Namespace: o.Namespace, Name: svc})
	case *mcsv1.ServiceExport:
		return rel.anyExport() || rel.service(types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	}
	return false
}

// connectionsChanged says whether an update of the Membership changed a connection's
// state in the member's summary of its Peers (strait dns): the ClusterSet's status
// shows the connections, so it is news, where a change of latency alone (written at
// most every 30 s) and the rest of the Membership's status are not.
func connectionsChanged(old, obj client.Object) bool {
	was, ok := old.(*straitv1.Membership)
	is, ok2 := obj.(*straitv1.Membership)
	return ok && ok2 && !connections.SameStates(was.Status.Connections, is.Status.Connections)
}

// kindOf names the kind of an object from the member informers (which carry no TypeMeta).
func kindOf(o client.Object) string {
	switch o.(type) {
	case *straitv1.Membership:
		return "Membership"
	case *straitv1.Peer:
		return "Peer"
	case *straitv1.Gateway:
		return "Gateway"
	case *straitv1.GlobalIngress:
		return "GlobalIngress"
	case *corev1.Service:
		return "Service"
	case *corev1.Secret:
		return "Secret"
	case *discoveryv1.EndpointSlice:
		return "EndpointSlice"
	case *mcsv1.ServiceExport:
		return "ServiceExport"
	case *mcsv1.ServiceImport:
		return "ServiceImport"
	}
	return o.GetObjectKind().GroupVersionKind().Kind
}
