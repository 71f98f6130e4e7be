package resolver

import (
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
)

// Entry is one service made ready for answering: its sources merged per cluster and
// ordered by cluster name. It does not depend on which clusters are connected, nor on the
// snapshot's Config, so successive snapshots share it until the service changes. It is
// immutable but for its round-robin position.
type Entry struct {
	svc Service
	// clusters are the sources, one per cluster, with lower-case names in ascending
	// order: svc.Sources itself when they already are, else a merged copy.
	clusters []ClusterSource
	rr       [2]atomic.Uint64
}

// KeyOf is the key svc is answered under.
func KeyOf(svc *Service) ServiceKey {
	return ServiceKey{Name: strings.ToLower(svc.Name), Namespace: strings.ToLower(svc.Namespace)}
}

// NewEntry prepares svc for answering. The entry keeps svc and its slices: the caller must
// not change them afterwards. Sources of one cluster are merged (ports appended, the
// endpoints ordered by address, publishNotReady when any says so); when svc.Sources
// already have distinct lower-case cluster names in ascending order they are used as
// they are, without a copy. prev, the entry svc replaces, hands its round-robin position
// on.
func NewEntry(svc Service, prev *Entry) *Entry {
	e := &Entry{svc: svc, clusters: svc.Sources}
	if !normalized(svc.Sources) {
		e.clusters = merge(svc.Sources)
	}
	if prev != nil {
		for f := range e.rr {
			e.rr[f].Store(prev.rr[f].Load())
		}
	}
	return e
}

// Key is the key the entry is answered under.
func (e *Entry) Key() ServiceKey { return KeyOf(&e.svc) }

// Service is the service the entry was made from; its slices are the entry's own and must
// not be changed.
func (e *Entry) Service() Service { return e.svc }

func normalized(srcs []ClusterSource) bool {
	for i := range srcs {
		c := srcs[i].Cluster
		if strings.ToLower(c) != c || i > 0 && srcs[i-1].Cluster >= c {
			return false
		}
	}
	return true
}

// merge is srcs with one source per lower-case cluster name, in ascending order.
func merge(srcs []ClusterSource) []ClusterSource {
	sorted := slices.Clone(srcs)
	for i := range sorted {
		sorted[i].Cluster = strings.ToLower(sorted[i].Cluster)
	}
	slices.SortStableFunc(sorted, func(a, b ClusterSource) int { return strings.Compare(a.Cluster, b.Cluster) })
	out := sorted[:0]
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].Cluster == sorted[i].Cluster {
			j++
		}
		c := sorted[i]
		if j > i+1 {
			c = ClusterSource{Cluster: c.Cluster}
			for _, s := range sorted[i:j] {
				c.Ports = append(c.Ports, s.Ports...)
				c.Endpoints = append(c.Endpoints, s.Endpoints...)
				c.PublishNotReady = c.PublishNotReady || s.PublishNotReady
			}
			slices.SortStableFunc(c.Endpoints, func(a, b Endpoint) int { return a.Addr.Compare(b.Addr) })
		}
		out = append(out, c)
		i = j
	}
	return slices.Clip(out)
}

// answerable says whether ep of c is answered with: a valid address that is ready, or any
// endpoint of a headless service whose source publishes not-ready addresses.
func (e *Entry) answerable(c *ClusterSource, ep *Endpoint) bool {
	return ep.Addr.IsValid() && (ep.Ready || c.PublishNotReady && e.svc.Headless)
}

// hasAddr says whether c has any answerable address.
func (e *Entry) hasAddr(c *ClusterSource) bool {
	for i := range c.Endpoints {
		if e.answerable(c, &c.Endpoints[i]) {
			return true
		}
	}
	return false
}

// count is the number of answerable addresses of family f in c.
func (e *Entry) count(c *ClusterSource, f family) int {
	n := 0
	for i := range c.Endpoints {
		if ep := &c.Endpoints[i]; e.answerable(c, ep) && familyOf(ep.Addr) == f {
			n++
		}
	}
	return n
}

// appendAddrs appends the answerable addresses of family f in c to dst.
func (e *Entry) appendAddrs(dst []netip.Addr, c *ClusterSource, f family) []netip.Addr {
	for i := range c.Endpoints {
		if ep := &c.Endpoints[i]; e.answerable(c, ep) && familyOf(ep.Addr) == f {
			dst = append(dst, ep.Addr.Unmap())
		}
	}
	return dst
}

// ordered appends to dst the sources that answer in s, those of the local cluster or of
// a connected one with any answerable address: the local cluster's first, then the
// others by name.
func (e *Entry) ordered(s *Snapshot, dst []*ClusterSource) []*ClusterSource {
	start := len(dst)
	for i := range e.clusters {
		c := &e.clusters[i]
		if !s.answering(c) || !e.hasAddr(c) {
			continue
		}
		dst = append(dst, c)
		if c.Cluster == s.local && len(dst)-1 > start {
			copy(dst[start+1:], dst[start:len(dst)-1])
			dst[start] = c
		}
	}
	return dst
}
