package resolver

import (
	"net/netip"
	"slices"
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

// ClusterSource is what one cluster contributes to a service: the EndpointSlices labelled
// with its source-cluster, merged.
type ClusterSource struct {
	Cluster string
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
	Ports   []Port
	Sources []ClusterSource
}

// Snapshot is an immutable view of every imported service; safe for concurrent readers.
type Snapshot struct {
	cfg      Config
	zones    []string // lower-case FQDNs, longest first
	services map[serviceKey]*service
	records  int
}

type serviceKey struct{ name, namespace string }

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

type service struct {
	name, namespace string
	headless        bool
	ports           []Port
	// ordered are the clusters that answer (connected or local, with published
	// addresses), local first, then by name. A service has a handful: a slice is
	// smaller and faster to build than a map.
	ordered []*cluster
	// local and remote are the ClusterSetIP candidates by family.
	local, remote [2][]netip.Addr
	rr            *roundRobin
}

// find is the answering cluster named name, nil when there is none.
func (svc *service) find(name string) *cluster {
	for _, c := range svc.ordered {
		if c.name == name {
			return c
		}
	}
	return nil
}

type roundRobin struct{ next [2]atomic.Uint64 }

type cluster struct {
	name  string
	ports []Port
	// addrs are the published addresses by family.
	addrs [2][]netip.Addr
	// endpoints of a headless service, with their DNS labels (hostname or dashed address).
	endpoints []endpoint
}

type endpoint struct {
	label string
	addr  netip.Addr
}

// NewSnapshot builds the snapshot for services. connected tells which remote clusters
// answer (the local cluster always does). prev, when not nil, hands its round-robin
// positions on so that a change elsewhere does not restart every rotation.
func NewSnapshot(cfg Config, services []Service, connected func(cluster string) bool, prev *Snapshot) *Snapshot {
	s := &Snapshot{cfg: cfg, services: make(map[serviceKey]*service, len(services))}
	for _, z := range cfg.Zones {
		s.zones = append(s.zones, fqdnLower(z))
	}
	if len(s.zones) == 0 {
		s.zones = []string{DefaultZone}
	}
	sort.Slice(s.zones, func(i, j int) bool { return len(s.zones[i]) > len(s.zones[j]) })
	localName := strings.ToLower(cfg.LocalCluster)
	for i := range services {
		in := &services[i]
		key := serviceKey{strings.ToLower(in.Name), strings.ToLower(in.Namespace)}
		svc := &service{name: key.name, namespace: key.namespace, headless: in.Headless, ports: in.Ports}
		if p := prev.lookup(key); p != nil {
			svc.rr = p.rr
		} else {
			svc.rr = &roundRobin{}
		}
		for j := range in.Sources {
			src := &in.Sources[j]
			name := strings.ToLower(src.Cluster)
			if name != localName && (connected == nil || !connected(src.Cluster)) {
				continue
			}
			c := svc.find(name)
			isNew := c == nil
			if isNew {
				c = &cluster{name: name, ports: src.Ports}
			}
			for _, ep := range src.Endpoints {
				if !ep.Addr.IsValid() || !ep.Ready && (!src.PublishNotReady || !in.Headless) {
					continue
				}
				addr := ep.Addr.Unmap()
				f := familyOf(addr)
				c.addrs[f] = append(c.addrs[f], addr)
				if in.Headless {
					label := strings.ToLower(ep.Hostname)
					if label == "" {
						label = dashed(addr)
					}
					c.endpoints = append(c.endpoints, endpoint{label: label, addr: addr})
				}
				s.records++
			}
			if isNew && len(c.addrs[v4])+len(c.addrs[v6]) > 0 {
				svc.ordered = append(svc.ordered, c)
			}
		}
		if len(svc.ordered) > 1 {
			slices.SortFunc(svc.ordered, func(a, b *cluster) int {
				if (a.name == localName) != (b.name == localName) {
					if a.name == localName {
						return -1
					}
					return 1
				}
				return strings.Compare(a.name, b.name)
			})
		}
		for _, c := range svc.ordered {
			for f := range c.addrs {
				if c.name == localName {
					svc.local[f] = append(svc.local[f], c.addrs[f]...)
				} else {
					svc.remote[f] = append(svc.remote[f], c.addrs[f]...)
				}
			}
		}
		s.services[key] = svc
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

// Config the snapshot answers with.
func (s *Snapshot) Config() Config { return s.cfg }

func (s *Snapshot) lookup(k serviceKey) *service {
	if s == nil {
		return nil
	}
	return s.services[k]
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

// dashed is the label of an endpoint without hostname: 10-1-2-3, or fd00--1 for IPv6.
func dashed(a netip.Addr) string {
	s := a.String()
	if a.Is4() {
		return strings.ReplaceAll(s, ".", "-")
	}
	return strings.ReplaceAll(s, ":", "-")
}
