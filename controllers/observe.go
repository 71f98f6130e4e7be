package controllers

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
)

// watchedKinds are what the hub reads in members, and so watches: a change to any of them
// can change the plan. Of the kinds the hub writes, those a member holds per import
// (ServiceImports, and the Services and EndpointSlices derived from them) and its Peers
// (memberprint.Reported) are not watched: members × exports objects, some 74 MiB of
// informers a member at 10,000 exports, and members² Peers, 2.4 GiB at 1,000 members.
// The member reports its print of them in the Membership's status, and a summary of its
// Peers' connections there too (strait dns); the hub reads them from the API server
// when a pass needs them (heldObjects). Services and EndpointSlices are watched for
// what the plan reads of them, people's, not the hub's.
func watchedKinds() []members.Watch {
	notTheHubs := labels.NewSelector().Add(notWrittenByTheHub())
	return []members.Watch{
		{Object: &straitv1.Gateway{}, Namespace: straitv1.SystemNamespace},
		{Object: &straitv1.Membership{}, Namespace: straitv1.SystemNamespace},
		{Object: &straitv1.GlobalIngress{}, Namespace: straitv1.SystemNamespace},
		{Object: &corev1.Service{}, Label: notTheHubs},
		{Object: &discoveryv1.EndpointSlice{}, Label: notTheHubs},
		{Object: &mcsv1.ServiceExport{}},
	}
}

// notWrittenByTheHub selects objects without the hub's managed-by label.
func notWrittenByTheHub() labels.Requirement {
	r, err := labels.NewRequirement(straitv1.LabelManagedBy, selection.NotEquals, []string{straitv1.ManagedByHub})
	if err != nil { // a constant key and value: the tests would catch it first
		panic(fmt.Sprintf("the hub's managed-by label does not select: %v", err))
	}
	return *r
}

// observe gives every member's facts, read from its informers when something they hold
// changed since the last reconcile read them (memberFacts). An unreachable member's
// facts are what was last seen; a member never seen has none. Which cluster a member is
// (its kube-system UID) is the connection's, read when it was made. The facts handed to
// the plan are never changed afterwards: a member read again gets new ones.
func (r *ClusterSetReconciler) observe(ctx context.Context, obj *straitv1.ClusterSet, conns map[string]*conn) plan.Observed {
	wanted := exportsByCluster(obj)
	memberExports := obj.Spec.ExportPolicy == straitv1.ExportPolicyMemberExports
	cs, now := clusterSetName(obj), time.Now()
	out := plan.Observed{}
	for i := range obj.Spec.Clusters {
		name := obj.Spec.Clusters[i].Name
		c := conns[name]
		if c == nil || c.member == nil {
			out[name] = &plan.MemberFacts{}
			continue
		}
		if !c.member.Synced() {
			out[name] = &plan.MemberFacts{KubeSystemUID: c.member.KnownKubeSystemUID()}
			continue
		}
		gw := endpointService(&obj.Spec.Clusters[i])
		f, err := r.factsOf(members.Key{ClusterSet: cs, Cluster: name}).read(c.member,
			factsInputs(wanted[name], memberExports, gw), now, func() (*plan.MemberFacts, error) {
				r.metrics.factsReads.WithLabelValues(plan.ClusterSetLabel(cs), name).Inc()
				return readFacts(ctx, c.member.Reader, c.member.Client, wanted[name], memberExports, gw)
			})
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			f = &plan.MemberFacts{KubeSystemUID: c.member.KnownKubeSystemUID()}
		}
		out[name] = f
	}
	return out
}

// exportsByCluster are, per cluster, the exports declared for it: the only services
// the plan reads there (besides those people export under MemberExports). Reading every
// export in every member would cost 255 × 10,000 informer lookups per reconcile in a
// large clusterset where 10,000 would do.
func exportsByCluster(obj *straitv1.ClusterSet) map[string]map[types.NamespacedName]bool {
	out := map[string]map[types.NamespacedName]bool{}
	add := func(c string, k types.NamespacedName) {
		if out[c] == nil {
			out[c] = map[types.NamespacedName]bool{}
		}
		out[c][k] = true
	}
	for _, e := range obj.Spec.Exports {
		k := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
		clusters := e.Clusters
		if len(clusters) == 0 {
			for i := range obj.Spec.Clusters {
				clusters = append(clusters, obj.Spec.Clusters[i].Name)
			}
		}
		for _, c := range clusters {
			add(c, k)
		}
	}
	return out
}

// ReadMemberFacts reads what the plan depends on from the member cluster of obj, as
// the hub does each reconcile (the same exports, those declared for that cluster):
// `strait diff` calls it with a direct client, so that its preview is computed from the
// same facts.
func ReadMemberFacts(ctx context.Context, rd client.Reader, obj *straitv1.ClusterSet, cluster string) (*plan.MemberFacts, error) {
	var svc *types.NamespacedName
	for i := range obj.Spec.Clusters {
		if obj.Spec.Clusters[i].Name == cluster {
			svc = endpointService(&obj.Spec.Clusters[i])
		}
	}
	return readFacts(ctx, rd, rd, exportsByCluster(obj)[cluster], obj.Spec.ExportPolicy == straitv1.ExportPolicyMemberExports, svc)
}

// endpointService is the Service a cluster's gateways are reached through (endpoint type
// LoadBalancer), or nil.
func endpointService(c *straitv1.ClusterSpec) *types.NamespacedName {
	ep := c.Gateway.Endpoint
	if ep == nil || ep.Type != straitv1.EndpointLoadBalancer || ep.Service == nil {
		return nil
	}
	return &types.NamespacedName{Namespace: ep.Service.Namespace, Name: ep.Service.Name}
}

// declaredExports are the namespace/name of every export in the spec.
func declaredExports(obj *straitv1.ClusterSet) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for _, e := range obj.Spec.Exports {
		out[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = true
	}
	return out
}

// readFacts reads a member's facts through rd (the hub's informers), and the Peers,
// which the hub does not watch, through direct (its API server) when the member reports
// no summary of them.
func readFacts(ctx context.Context, rd, direct client.Reader, declared map[types.NamespacedName]bool, memberExports bool, gwService *types.NamespacedName) (*plan.MemberFacts, error) {
	f := &plan.MemberFacts{}
	if gwService != nil {
		svc := &corev1.Service{}
		switch err := rd.Get(ctx, *gwService, svc); {
		case err == nil:
			f.GatewayService = svc
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading the gateways' service %s: %w", gwService, err)
		}
	}
	inSystem := client.InNamespace(straitv1.SystemNamespace)

	var gws straitv1.GatewayList
	if err := rd.List(ctx, &gws, inSystem); err != nil {
		return nil, fmt.Errorf("listing gateways: %w", err)
	}
	f.Gateways = gws.Items
	m := &straitv1.Membership{}
	switch err := rd.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m); {
	case err == nil:
		f.Membership = m
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the membership: %w", err)
	}
	if !reportsConnections(f.Membership) {
		// No summary of its Peers (no strait dns there, or an older one): the Peers
		// themselves, from the API server, since the hub does not watch them.
		peers, err := listPaged(ctx, direct, &straitv1.PeerList{}, inSystem)
		if err != nil {
			return nil, fmt.Errorf("listing peers: %w", err)
		}
		for _, p := range peers {
			if p, ok := p.(*straitv1.Peer); ok {
				f.Peers = append(f.Peers, *p)
			}
		}
	}
	var gis straitv1.GlobalIngressList
	if err := rd.List(ctx, &gis, inSystem); err != nil {
		return nil, fmt.Errorf("listing global ingresses: %w", err)
	}
	f.GlobalIngresses = gis.Items

	var ses mcsv1.ServiceExportList
	if err := rd.List(ctx, &ses); err != nil {
		return nil, fmt.Errorf("listing service exports: %w", err)
	}
	exported := map[types.NamespacedName]bool{}
	for k := range declared {
		exported[k] = true
	}
	for _, se := range ses.Items {
		k := types.NamespacedName{Namespace: se.Namespace, Name: se.Name}
		ours := se.Labels[straitv1.LabelManagedBy] == straitv1.ManagedByHub
		if declared[k] || (memberExports && !ours) {
			f.ServiceExports = append(f.ServiceExports, se)
			exported[k] = true
		}
	}
	// Only the services that are exported, and their slices: a member may hold many.
	for k := range exported {
		svc := &corev1.Service{}
		switch err := rd.Get(ctx, k, svc); {
		case err == nil:
			f.Services = append(f.Services, *svc)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading service %s: %w", k, err)
		}
		var slices discoveryv1.EndpointSliceList
		if err := rd.List(ctx, &slices, client.InNamespace(k.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: k.Name}); err != nil {
			return nil, fmt.Errorf("listing endpoint slices of %s: %w", k, err)
		}
		f.EndpointSlices = append(f.EndpointSlices, slices.Items...)
	}
	sortFacts(f)
	return f, nil
}

// sortFacts orders what came out of maps, so that the same member state always gives
// the same plan.
func sortFacts(f *plan.MemberFacts) {
	sort.Slice(f.Services, func(i, j int) bool {
		return key(&f.Services[i]) < key(&f.Services[j])
	})
	sort.Slice(f.EndpointSlices, func(i, j int) bool {
		return key(&f.EndpointSlices[i]) < key(&f.EndpointSlices[j])
	})
}

func key(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// reportsConnections says whether the member's Membership carries strait dns's summary
// of its Peers (status.connections), which the plan lists the connections from.
func reportsConnections(m *straitv1.Membership) bool {
	return m != nil && m.Status.Connections != nil
}
