package source

import (
	discoveryv1 "k8s.io/api/discovery/v1"
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

// config is the resolver configuration the Membership m (nil while there is none) and
// the overrides imply.
func config(m *membershipRecord, o Overrides, serial uint32) resolver.Config {
	cfg := resolver.Config{Zones: []string{resolver.DefaultZone}, TTL: resolver.DefaultTTL, ClusterNames: true,
		LocalCluster: o.ClusterID, Serial: serial}
	if m != nil {
		cfg.Member = true
		if cfg.LocalCluster == "" {
			cfg.LocalCluster = m.clusterID
		}
		cfg.Zones = append(cfg.Zones, m.dns.ExtraZones...)
		if m.dns.TTLSeconds > 0 {
			cfg.TTL = uint32(m.dns.TTLSeconds)
		}
		cfg.ClusterNames = !m.dns.DisableClusterNames
		cfg.LocalFirst = m.dns.ServiceAnswer == straitv1.ServiceAnswerLocalFirst
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

// State is a member's objects that the answers depend on, all at once.
type State struct {
	// Membership of this member; nil while there is none.
	Membership *straitv1.Membership
	Peers      []straitv1.Peer
	Imports    []mcsv1.ServiceImport
	// Slices labelled with the MCS service-name and source-cluster labels.
	Slices []discoveryv1.EndpointSlice
}

// Build is the snapshot strait dns serves for st: the objects go through the same
// records and store as the informers' do, in one go. The Peers are taken to be in the
// Membership's namespace (strait-system when there is none).
//
// What the answers make of the objects: slices of a service that is not imported are
// ignored; several slices of one source cluster are merged. An endpoint whose ready
// condition is unset counts as ready, as in Kubernetes. A headless slice that lists a
// not-ready endpoint belongs to a service with publishNotReadyAddresses: the hub lists
// not-ready endpoints only for those. A remote cluster answers while its Peer has no
// Connected=False condition (without conditions: while its state is not Connecting or
// Error); a remote cluster without a Peer does not, since the hub writes a Peer for every
// remote cluster with the same apply that writes its slices.
func Build(st *State, o Overrides, serial uint32) (*resolver.Snapshot, error) {
	s := newState(newInterner(), nil)
	namespace := straitv1.SystemNamespace
	var recs []any
	if st.Membership != nil {
		m := *st.Membership
		namespace, m.Name = m.Namespace, straitv1.MembershipName
		recs = append(recs, s.in.record(&m))
	}
	for i := range st.Peers {
		p := st.Peers[i]
		p.Namespace = namespace
		recs = append(recs, s.in.record(&p))
	}
	for i := range st.Imports {
		recs = append(recs, s.in.record(&st.Imports[i]))
	}
	for i := range st.Slices {
		recs = append(recs, s.in.record(&st.Slices[i]))
	}
	for _, rec := range recs {
		if err := s.apply(rec, opAdd); err != nil {
			return nil, err
		}
	}
	return s.build(namespace, o, serial), nil
}
