package resolver

import (
	"net/netip"
	"sort"
	"strings"
	"sync/atomic"
)

// DefaultZone is the MCS zone.
const DefaultZone = "clusterset.local."

// DefaultTTL of answers, in seconds.
const DefaultTTL = 5

// DNSVersion is the TXT answer of dns-version.<zone>, the MCS DNS spec version served.
const DNSVersion = "1.0.0"

// Config is how the snapshot answers, independent of the services in it.
type Config struct {
	// Zones served, as FQDNs ("clusterset.local."). Empty means DefaultZone.
	Zones []string
	// TTL of every answer and of negative answers (SOA minimum), in seconds.
	TTL uint32
	// ClusterNames turns on <cluster>.<svc>.<ns>.svc.<zone>; off for strict MCS
	// conformance. Per-endpoint names of headless services are served either way.
	ClusterNames bool
	// LocalCluster is this member's cluster ID: its ready export is preferred.
	LocalCluster string
	// LocalFirst answers the name of a ClusterSetIP service with one cluster's address
	// (the local cluster's while its export is ready, else the connected clusters' in
	// turn) instead of the service's clusterset IPs; a service without clusterset IPs
	// (not written yet) is answered so either way.
	LocalFirst bool
	// Member says whether the cluster belongs to a clusterset: its Membership exists.
	Member bool
	// Serial of the zone's SOA; the source bumps it on every new snapshot.
	Serial uint32
}

// Port is a named service port.
type Port struct {
	Name string
	// Protocol as in Kubernetes: TCP, UDP or SCTP.
	Protocol string
	Port     uint16
}

// Endpoint is one address of a headless service, or the one address of a ClusterSetIP
// service, in one cluster.
type Endpoint struct {
	Addr netip.Addr
	// Hostname of a headless endpoint; empty makes its name the dashed address.
	Hostname string
	Ready    bool
}

// ClusterSource is what one cluster contributes to a service: one EndpointSlice labelled
// with its source-cluster, or several merged. Several sources of one cluster are merged
// when the service's Entry is made: ports appended, endpoints ordered by address.
type ClusterSource struct {
	Cluster string
	// Key tells apart the sources of one service for whoever builds them (package
	// source: the EndpointSlice's name); answers do not depend on it.
	Key string
	// Ports as the slices list them; for a headless service these are the target ports
	// SRV answers carry. Empty means the service's ports.
	Ports     []Port
	Endpoints []Endpoint
	// PublishNotReady answers not-ready endpoints too (publishNotReadyAddresses).
	PublishNotReady bool
}

// Service is one ServiceImport and its sources.
type Service struct {
	Namespace, Name string
	Headless        bool
	// Ports of the ServiceImport.
	Ports []Port
	// IPs are the ServiceImport's clusterset IPs (spec.ips).
	IPs     []netip.Addr
	Sources []ClusterSource
}

// ServiceKey names a service in a Snapshot: its lower-case name and namespace.
type ServiceKey struct{ Name, Namespace string }

// Snapshot is an immutable view of every imported service; safe for concurrent readers.
// It holds each service's Entry by pointer, so successive snapshots share the entries of
// the services that did not change; which clusters answer is applied when a question is
// answered, not copied into the entries.
type Snapshot struct {
	cfg      Config
	zones    []string // lower-case FQDNs, longest first
	local    string   // lower-case LocalCluster
	answers  map[string]bool
	services map[ServiceKey]*Entry
	records  int
}

// family indexes address families: 0 is IPv4, 1 is IPv6.
type family int

const (
	v4 family = iota
	v6
)

func familyOf(a netip.Addr) family {
	if a.Is4() || a.Is4In6() {
		return v4
	}
	return v6
}

// NewSnapshot builds the snapshot for services. connected tells which remote clusters
// answer (the local cluster always does). prev, when not nil, hands its round-robin
// positions on so that a change elsewhere does not restart every rotation.
func NewSnapshot(cfg Config, services []Service, connected func(cluster string) bool, prev *Snapshot) *Snapshot {
	entries := make(map[ServiceKey]*Entry, len(services))
	pool := NewPool()
	for i := range services {
		key := KeyOf(&services[i])
		entries[key] = pool.NewEntry(services[i], prev.Entry(key))
	}
	return Assemble(cfg, entries, connected)
}

// Assemble is the snapshot answering from entries, keyed by KeyOf their service.
// connected tells which remote clusters answer (the local cluster always does); it is
// asked once per cluster name here, never while answering. The snapshot keeps entries:
// the caller must not change the map afterwards.
func Assemble(cfg Config, entries map[ServiceKey]*Entry, connected func(cluster string) bool) *Snapshot {
	s := &Snapshot{cfg: cfg, services: entries, local: strings.ToLower(cfg.LocalCluster), answers: map[string]bool{}}
	for _, z := range cfg.Zones {
		s.zones = append(s.zones, fqdnLower(z))
	}
	if len(s.zones) == 0 {
		s.zones = []string{DefaultZone}
	}
	sort.Slice(s.zones, func(i, j int) bool { return len(s.zones[i]) > len(s.zones[j]) })
	asked := map[string]bool{}
	for _, e := range entries {
		for i := range e.sources {
			name := e.sources[i].cluster
			if _, ok := asked[name]; ok {
				continue
			}
			asked[name] = connected != nil && connected(name)
			if asked[name] {
				s.answers[strings.ToLower(name)] = true
			}
		}
	}
	for _, e := range entries {
		clusters := e.clusters()
		for i := range clusters {
			if c := &clusters[i]; s.answering(c) {
				s.records += e.count(c, v4) + e.count(c, v6)
			}
		}
	}
	return s
}

// Services is the number of imported services in the snapshot.
func (s *Snapshot) Services() int {
	if s == nil {
		return 0
	}
	return len(s.services)
}

// Records is the number of addresses the snapshot answers with.
func (s *Snapshot) Records() int {
	if s == nil {
		return 0
	}
	return s.records
}

// EachImport calls f with every imported service of the snapshot, in no order, as its
// ServiceImport says it: name, type, ports and clusterset IPs, without its sources. The
// Service shares the snapshot's memory: f must not change it.
func (s *Snapshot) EachImport(f func(Service)) {
	if s == nil {
		return
	}
	for _, e := range s.services {
		f(Service{Namespace: e.namespace, Name: e.name, Headless: e.headless, Ports: e.ports, IPs: e.ips})
	}
}

// Config the snapshot answers with.
func (s *Snapshot) Config() Config { return s.cfg }

// Entry is the service named k, nil when there is none (or s is nil).
func (s *Snapshot) Entry(k ServiceKey) *Entry {
	if s == nil {
		return nil
	}
	return s.services[k]
}

// answering says whether c's addresses are answered with: it is the local cluster or a
// connected one.
func (s *Snapshot) answering(c *source) bool {
	return c.cluster == s.local || s.answers[c.cluster]
}

// Current holds the snapshot in use; the source swaps it, the server loads it.
type Current struct{ p atomic.Pointer[Snapshot] }

// Load returns the snapshot in use, nil before the first Store.
func (c *Current) Load() *Snapshot { return c.p.Load() }

// Store swaps in s.
func (c *Current) Store(s *Snapshot) { c.p.Store(s) }

func fqdnLower(z string) string {
	z = strings.ToLower(strings.TrimSpace(z))
	if !strings.HasSuffix(z, ".") {
		z += "."
	}
	return strings.TrimPrefix(z, ".")
}
