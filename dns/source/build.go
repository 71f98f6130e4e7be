package source

import (
	"net/netip"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
)

// Overrides are settings given on the command line; each wins over the Membership's.
type Overrides struct {
	// ExtraZones are served in addition to clusterset.local and the Membership's.
	ExtraZones []string
	// TTL, when not nil, replaces spec.dns.ttlSeconds.
	TTL *uint32
	// ClusterNames, when not nil, replaces !spec.dns.disableClusterNames.
	ClusterNames *bool
	// ClusterID, when not empty, is the local cluster even before a Membership exists.
	ClusterID string
}

// State is what the member's API server holds that the answers depend on.
type State struct {
	// Membership of this member; nil while there is none.
	Membership *straitv1.Membership
	Peers      []straitv1.Peer
	Imports    []mcsv1.ServiceImport
	// Slices labelled with the MCS service-name and source-cluster labels.
	Slices []discoveryv1.EndpointSlice
}

// Config is the resolver configuration State and the overrides imply.
func Config(st *State, o Overrides, serial uint32) resolver.Config {
	cfg := resolver.Config{Zones: []string{resolver.DefaultZone}, TTL: resolver.DefaultTTL, ClusterNames: true,
		LocalCluster: o.ClusterID, Serial: serial}
	if m := st.Membership; m != nil {
		cfg.Member = true
		if cfg.LocalCluster == "" {
			cfg.LocalCluster = m.Spec.ClusterID
		}
		cfg.Zones = append(cfg.Zones, m.Spec.DNS.ExtraZones...)
		if m.Spec.DNS.TTLSeconds > 0 {
			cfg.TTL = uint32(m.Spec.DNS.TTLSeconds)
		}
		cfg.ClusterNames = !m.Spec.DNS.DisableClusterNames
	}
	cfg.Zones = append(cfg.Zones, o.ExtraZones...)
	if o.TTL != nil {
		cfg.TTL = *o.TTL
	}
	if o.ClusterNames != nil {
		cfg.ClusterNames = *o.ClusterNames
	}
	return cfg
}

// Connected tells which remote clusters answer: those with a Peer whose Connected
// condition is not False. A Peer without that condition counts by its state (anything
// but Connecting or Error is connected), so that a clusterset without health checks
// still resolves; a remote cluster without a Peer is not connected, since the hub writes
// a Peer for every remote cluster with the same apply that writes its slices.
func Connected(peers []straitv1.Peer) map[string]bool {
	out := make(map[string]bool, len(peers))
	for i := range peers {
		p := &peers[i]
		if c := apimeta.FindStatusCondition(p.Status.Conditions, straitv1.ConditionConnected); c != nil {
			out[p.Spec.ClusterID] = c.Status != metav1.ConditionFalse
			continue
		}
		out[p.Spec.ClusterID] = p.Status.State != "Connecting" && p.Status.State != "Error"
	}
	return out
}

// Services converts ServiceImports and their EndpointSlices into the resolver's model.
// Slices of a service that is not imported are ignored; several slices of one source
// cluster are merged. An endpoint whose ready condition is unset counts as ready, as in
// Kubernetes. A headless slice that lists a not-ready endpoint belongs to a service with
// publishNotReadyAddresses: the hub lists not-ready endpoints only for those.
func Services(imports []mcsv1.ServiceImport, endpointSlices []discoveryv1.EndpointSlice) []resolver.Service {
	type key struct{ ns, name string }
	idx := make(map[key]int, len(imports))
	out := make([]resolver.Service, 0, len(imports))
	for i := range imports {
		si := &imports[i]
		svc := resolver.Service{Namespace: si.Namespace, Name: si.Name, Headless: si.Spec.Type == mcsv1.Headless}
		for _, p := range si.Spec.Ports {
			svc.Ports = append(svc.Ports, resolver.Port{Name: p.Name, Protocol: string(p.Protocol), Port: uint16(p.Port)})
		}
		idx[key{si.Namespace, si.Name}] = len(out)
		out = append(out, svc)
	}
	for k := range endpointSlices {
		sl := &endpointSlices[k]
		i, ok := idx[key{sl.Namespace, sl.Labels[mcsv1.LabelServiceName]}]
		cluster := sl.Labels[mcsv1.LabelSourceCluster]
		if !ok || cluster == "" {
			continue
		}
		svc := &out[i]
		var src *resolver.ClusterSource
		for j := range svc.Sources {
			if svc.Sources[j].Cluster == cluster {
				src = &svc.Sources[j]
			}
		}
		if src == nil {
			svc.Sources = append(svc.Sources, resolver.ClusterSource{Cluster: cluster})
			src = &svc.Sources[len(svc.Sources)-1]
		}
		for _, p := range sl.Ports {
			rp := resolver.Port{Protocol: "TCP"}
			if p.Name != nil {
				rp.Name = *p.Name
			}
			if p.Protocol != nil {
				rp.Protocol = string(*p.Protocol)
			}
			if p.Port != nil {
				rp.Port = uint16(*p.Port)
			}
			src.Ports = append(src.Ports, rp)
		}
		for _, ep := range sl.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if !ready && svc.Headless {
				src.PublishNotReady = true
			}
			host := ""
			if ep.Hostname != nil {
				host = *ep.Hostname
			}
			for _, a := range ep.Addresses {
				addr, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				src.Endpoints = append(src.Endpoints, resolver.Endpoint{Addr: addr, Hostname: host, Ready: ready})
			}
		}
	}
	// The cache lists in no particular order: sort, so that answers do not change
	// order from one snapshot to the next.
	for i := range out {
		srcs := out[i].Sources
		if len(srcs) > 1 {
			slices.SortFunc(srcs, func(a, b resolver.ClusterSource) int { return strings.Compare(a.Cluster, b.Cluster) })
		}
		for j := range srcs {
			if eps := srcs[j].Endpoints; len(eps) > 1 {
				slices.SortFunc(eps, func(a, b resolver.Endpoint) int { return a.Addr.Compare(b.Addr) })
			}
		}
	}
	return out
}

// Build is the snapshot of st; prev hands its round-robin positions on.
func Build(st *State, o Overrides, serial uint32, prev *resolver.Snapshot) *resolver.Snapshot {
	connected := Connected(st.Peers)
	return resolver.NewSnapshot(Config(st, o, serial), Services(st.Imports, st.Slices),
		func(c string) bool { return connected[c] }, prev)
}
