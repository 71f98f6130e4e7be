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
	name, namespace string
	ports           []Port
	headless        bool
	ips             []netip.Addr
	// sources are the service's sources as given.
	sources []source
	// merged, when not nil, are the sources one per cluster, lower-case, in ascending
	// order, when sources are not already so.
	merged *[]source
	rr     [2]atomic.Uint64
}

// source is a ClusterSource in an Entry: its endpoints, and the rest, which the sources
// of many services have in common (hub-made slices of one cluster have the same cluster,
// key and ports), held once by the Pool.
type source struct {
	*sourceMeta
	eps []Endpoint
}

type sourceMeta struct {
	cluster, key string
	ports        []Port
	pnr          bool
}

// metaKey identifies a sourceMeta: port lists by their backing array.
type metaKey struct {
	cluster, key string
	ports        *Port
	nports       int
	pnr          bool
}

// maxMetas bounds a Pool: past it, it forgets what it holds and starts over, so that
// sources that come and go cannot grow it without end.
const maxMetas = 1 << 16

// Pool makes entries whose sources share what they have in common: the cluster name, key,
// port list (the same backing array) and publishNotReady. Sharing is what keeps an entry
// small; a caller that makes many entries (package source) keeps one Pool for all. It is
// not safe for concurrent use.
type Pool struct{ metas map[metaKey]*sourceMeta }

// NewPool is an empty Pool.
func NewPool() *Pool { return &Pool{metas: map[metaKey]*sourceMeta{}} }

func (p *Pool) meta(c *ClusterSource) *sourceMeta {
	k := metaKey{cluster: c.Cluster, key: c.Key, nports: len(c.Ports), pnr: c.PublishNotReady}
	if len(c.Ports) > 0 {
		k.ports = &c.Ports[0]
	}
	if m := p.metas[k]; m != nil {
		return m
	}
	if len(p.metas) >= maxMetas {
		clear(p.metas)
	}
	m := &sourceMeta{cluster: c.Cluster, key: c.Key, ports: c.Ports, pnr: c.PublishNotReady}
	p.metas[k] = m
	return m
}

// KeyOf is the key svc is answered under.
func KeyOf(svc *Service) ServiceKey {
	return ServiceKey{Name: strings.ToLower(svc.Name), Namespace: strings.ToLower(svc.Namespace)}
}

// NewEntry prepares svc for answering, sharing nothing with other entries (Pool.NewEntry
// does).
func NewEntry(svc Service, prev *Entry) *Entry { return NewPool().NewEntry(svc, prev) }

// NewEntry prepares svc for answering. The entry keeps svc's port lists and endpoints:
// the caller must not change them afterwards. Sources of one cluster are merged (ports
// appended, the endpoints ordered by address, publishNotReady when any says so); when
// svc.Sources already have distinct lower-case cluster names in ascending order they are
// used as they are. prev, the entry svc replaces, hands its round-robin position on.
func (p *Pool) NewEntry(svc Service, prev *Entry) *Entry {
	e := &Entry{name: svc.Name, namespace: svc.Namespace, ports: svc.Ports, headless: svc.Headless, ips: svc.IPs}
	e.sources = p.sourcesOf(svc.Sources)
	if !normalized(svc.Sources) {
		merged := p.sourcesOf(merge(svc.Sources))
		e.merged = &merged
	}
	if prev != nil {
		for f := range e.rr {
			e.rr[f].Store(prev.rr[f].Load())
		}
	}
	return e
}

func (p *Pool) sourcesOf(srcs []ClusterSource) []source {
	if len(srcs) == 0 {
		return nil
	}
	out := make([]source, len(srcs))
	for i := range srcs {
		out[i] = source{sourceMeta: p.meta(&srcs[i]), eps: srcs[i].Endpoints}
	}
	return out
}

// clusters are the entry's sources one per cluster, in ascending order of lower-case
// names.
func (e *Entry) clusters() []source {
	if e.merged != nil {
		return *e.merged
	}
	return e.sources
}

// Key is the key the entry is answered under.
func (e *Entry) Key() ServiceKey {
	return ServiceKey{Name: strings.ToLower(e.name), Namespace: strings.ToLower(e.namespace)}
}

// Service is the service the entry was made from, in a new slice of sources; the port
// lists and endpoints are the entry's own and must not be changed.
func (e *Entry) Service() Service {
	svc := Service{Namespace: e.namespace, Name: e.name, Headless: e.headless, Ports: e.ports, IPs: e.ips}
	if len(e.sources) > 0 {
		svc.Sources = make([]ClusterSource, len(e.sources))
		for i, s := range e.sources {
			svc.Sources[i] = ClusterSource{Cluster: s.cluster, Key: s.key, Ports: s.ports, Endpoints: s.eps, PublishNotReady: s.pnr}
		}
	}
	return svc
}

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
func (e *Entry) answerable(c *source, ep *Endpoint) bool {
	return ep.Addr.IsValid() && (ep.Ready || c.pnr && e.headless)
}

// hasAddr says whether c has any answerable address.
func (e *Entry) hasAddr(c *source) bool {
	for i := range c.eps {
		if e.answerable(c, &c.eps[i]) {
			return true
		}
	}
	return false
}

// count is the number of answerable addresses of family f in c.
func (e *Entry) count(c *source, f family) int {
	n := 0
	for i := range c.eps {
		if ep := &c.eps[i]; e.answerable(c, ep) && familyOf(ep.Addr) == f {
			n++
		}
	}
	return n
}

// appendAddrs appends the answerable addresses of family f in c to dst.
func (e *Entry) appendAddrs(dst []netip.Addr, c *source, f family) []netip.Addr {
	for i := range c.eps {
		if ep := &c.eps[i]; e.answerable(c, ep) && familyOf(ep.Addr) == f {
			dst = append(dst, ep.Addr.Unmap())
		}
	}
	return dst
}

// ordered appends to dst the sources that answer in s, those of the local cluster or of
// a connected one with any answerable address: the local cluster's first, then the
// others by name.
func (e *Entry) ordered(s *Snapshot, dst []*source) []*source {
	start := len(dst)
	clusters := e.clusters()
	for i := range clusters {
		c := &clusters[i]
		if !s.answering(c) || !e.hasAddr(c) {
			continue
		}
		dst = append(dst, c)
		if c.cluster == s.local && len(dst)-1 > start {
			copy(dst[start+1:], dst[start:len(dst)-1])
			dst[start] = c
		}
	}
	return dst
}
