package resolver

import (
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// Answer is the reply to one question: the rcode and the sections of the response.
type Answer struct {
	Rcode  int
	Answer []dns.RR
	Ns     []dns.RR
	Extra  []dns.RR
}

// maxLabels is the most labels below a zone any served name has
// (_<port>._<proto>.<cluster>.<svc>.<ns>.svc).
const maxLabels = 6

// Resolve answers the question (qname, qtype) of class IN. Names outside the snapshot's
// zones are REFUSED; names inside that do not exist, or whose service has no ready
// endpoint in a connected cluster, are NXDOMAIN; names that exist without records of
// qtype get an empty NOERROR. Negative answers carry the zone's SOA.
func (s *Snapshot) Resolve(qname string, qtype uint16) Answer {
	lower := strings.ToLower(qname)
	if !strings.HasSuffix(lower, ".") {
		lower += "."
		qname += "."
	}
	zone := s.zoneOf(lower)
	if zone == "" {
		return Answer{Rcode: dns.RcodeRefused}
	}
	rel := strings.TrimSuffix(lower[:len(lower)-len(zone)], ".")
	var l [maxLabels]string
	n := splitLabels(rel, &l)
	q := query{s: s, qname: qname, qtype: qtype, zone: zone}
	switch {
	case n == 0:
		if qtype == dns.TypeSOA {
			return Answer{Answer: []dns.RR{s.soa(zone)}}
		}
		return q.noData()
	case n == 1 && l[0] == "dns-version":
		if qtype == dns.TypeTXT || qtype == dns.TypeANY {
			return Answer{Answer: []dns.RR{&dns.TXT{Hdr: q.hdr(dns.TypeTXT), Txt: []string{DNSVersion}}}}
		}
		return q.noData()
	case n == 1 && l[0] == "svc":
		return q.noData()
	case n < 3 || n > maxLabels || l[n-1] != "svc":
		return q.nxDomain()
	}
	svc := s.services[serviceKey{l[n-3], l[n-2]}]
	if svc == nil || len(svc.ordered) == 0 {
		return q.nxDomain()
	}
	srv := n >= 5 && isUnderscored(l[0]) && isUnderscored(l[1])
	switch {
	case n == 3:
		return q.service(svc)
	case n == 4 && s.cfg.ClusterNames && !isUnderscored(l[0]):
		return q.cluster(svc, svc.find(l[0]))
	case n == 5 && srv:
		return q.srv(svc, nil, l[0][1:], l[1][1:])
	case n == 5 && svc.headless && !isUnderscored(l[0]):
		return q.endpoint(svc.find(l[1]), l[0])
	case n == 6 && srv && s.cfg.ClusterNames:
		c := svc.find(l[2])
		if c == nil {
			return q.nxDomain()
		}
		return q.srv(svc, c, l[0][1:], l[1][1:])
	}
	return q.nxDomain()
}

func (s *Snapshot) zoneOf(name string) string {
	for _, z := range s.zones {
		if name == z || strings.HasSuffix(name, z) && name[len(name)-len(z)-1] == '.' {
			return z
		}
	}
	return ""
}

// splitLabels splits rel into l and returns their number, or maxLabels+1 when there are
// more than l holds (no such name is served).
func splitLabels(rel string, l *[maxLabels]string) int {
	if rel == "" {
		return 0
	}
	n := 0
	for {
		if n == maxLabels {
			return maxLabels + 1
		}
		i := strings.IndexByte(rel, '.')
		if i < 0 {
			l[n] = rel
			return n + 1
		}
		l[n], rel = rel[:i], rel[i+1:]
		n++
	}
}

func isUnderscored(label string) bool { return len(label) > 1 && label[0] == '_' }

// query is one question being answered.
type query struct {
	s     *Snapshot
	qname string
	qtype uint16
	zone  string
}

func (q *query) hdr(t uint16) dns.RR_Header {
	return dns.RR_Header{Name: q.qname, Rrtype: t, Class: dns.ClassINET, Ttl: q.s.cfg.TTL}
}

func (q *query) nxDomain() Answer {
	return Answer{Rcode: dns.RcodeNameError, Ns: []dns.RR{q.s.soa(q.zone)}}
}

func (q *query) noData() Answer {
	return Answer{Ns: []dns.RR{q.s.soa(q.zone)}}
}

func (s *Snapshot) soa(zone string) dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: s.cfg.TTL},
		Ns:      "ns.dns." + zone,
		Mbox:    "hostmaster." + zone,
		Serial:  s.cfg.Serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  s.cfg.TTL,
	}
}

// families are the address families qtype asks for; ok is false for other types.
func families(qtype uint16) (fs []family, ok bool) {
	switch qtype {
	case dns.TypeA:
		return []family{v4}, true
	case dns.TypeAAAA:
		return []family{v6}, true
	case dns.TypeANY:
		return []family{v4, v6}, true
	}
	return nil, false
}

// addresses answers with addrs of the asked families, NODATA when there are none.
func (q *query) addresses(pick func(family) []netip.Addr) Answer {
	fs, ok := families(q.qtype)
	if !ok {
		return q.noData()
	}
	var out []dns.RR
	for _, f := range fs {
		out = q.appendAddrs(out, q.qname, pick(f))
	}
	if len(out) == 0 {
		return q.noData()
	}
	return Answer{Answer: out}
}

func (q *query) appendAddrs(out []dns.RR, owner string, addrs []netip.Addr) []dns.RR {
	for _, a := range addrs {
		h := dns.RR_Header{Name: owner, Class: dns.ClassINET, Ttl: q.s.cfg.TTL}
		if a.Is4() {
			h.Rrtype = dns.TypeA
			b := a.As4()
			out = append(out, &dns.A{Hdr: h, A: net.IP(b[:])})
		} else {
			h.Rrtype = dns.TypeAAAA
			b := a.As16()
			out = append(out, &dns.AAAA{Hdr: h, AAAA: net.IP(b[:])})
		}
	}
	return out
}

// service answers <svc>.<ns>.svc.<zone>.
func (q *query) service(svc *service) Answer {
	return q.addresses(func(f family) []netip.Addr { return svc.pick(f) })
}

// pick is the answer for a service name: for ClusterSetIP the local cluster's address
// when it is ready, else the next connected cluster's in turn; for headless every
// published endpoint, local ones first.
func (svc *service) pick(f family) []netip.Addr {
	if svc.headless {
		if len(svc.remote[f]) == 0 {
			return svc.local[f]
		}
		all := make([]netip.Addr, 0, len(svc.local[f])+len(svc.remote[f]))
		return append(append(all, svc.local[f]...), svc.remote[f]...)
	}
	if len(svc.local[f]) > 0 {
		return svc.local[f]
	}
	r := svc.remote[f]
	if len(r) == 0 {
		return nil
	}
	i := (svc.rr.next[f].Add(1) - 1) % uint64(len(r))
	return r[i : i+1]
}

// cluster answers <cluster>.<svc>.<ns>.svc.<zone>.
func (q *query) cluster(svc *service, c *cluster) Answer {
	if c == nil {
		return q.nxDomain()
	}
	return q.addresses(func(f family) []netip.Addr { return c.addrs[f] })
}

// endpoint answers <hostname>.<cluster>.<svc>.<ns>.svc.<zone> of a headless service.
func (q *query) endpoint(c *cluster, label string) Answer {
	if c == nil {
		return q.nxDomain()
	}
	var addrs [2][]netip.Addr
	for _, ep := range c.endpoints {
		if ep.label == label {
			f := familyOf(ep.addr)
			addrs[f] = append(addrs[f], ep.addr)
		}
	}
	if len(addrs[v4])+len(addrs[v6]) == 0 {
		return q.nxDomain()
	}
	return q.addresses(func(f family) []netip.Addr { return addrs[f] })
}

// srv answers _<port>._<proto>.[<cluster>.]<svc>.<ns>.svc.<zone>: for ClusterSetIP one
// record targeting the service (or cluster) name, for headless one per endpoint
// targeting its per-endpoint name, with the targets' addresses as additional records.
func (q *query) srv(svc *service, only *cluster, portName, proto string) Answer {
	var port *Port
	for i := range svc.ports {
		p := &svc.ports[i]
		if p.Name != "" && strings.EqualFold(p.Name, portName) && strings.EqualFold(p.Protocol, proto) {
			port = p
			break
		}
	}
	if port == nil {
		return q.nxDomain()
	}
	if q.qtype != dns.TypeSRV && q.qtype != dns.TypeANY {
		return q.noData()
	}
	base := svc.name + "." + svc.namespace + ".svc." + q.zone
	var a Answer
	add := func(target string, p uint16, addrs [2][]netip.Addr) {
		a.Answer = append(a.Answer, &dns.SRV{Hdr: q.hdr(dns.TypeSRV), Priority: 0, Weight: 100, Port: p, Target: target})
		a.Extra = q.appendAddrs(a.Extra, target, addrs[v4])
		a.Extra = q.appendAddrs(a.Extra, target, addrs[v6])
	}
	if !svc.headless {
		if only != nil {
			add(only.name+"."+base, port.Port, only.addrs)
		} else {
			add(base, port.Port, [2][]netip.Addr{svc.pick(v4), svc.pick(v6)})
		}
		return a
	}
	for _, c := range svc.ordered {
		if only != nil && c != only {
			continue
		}
		p := port.Port
		for _, cp := range c.ports {
			if strings.EqualFold(cp.Name, port.Name) && strings.EqualFold(cp.Protocol, port.Protocol) {
				p = cp.Port
			}
		}
		for _, ep := range c.endpoints {
			var addrs [2][]netip.Addr
			addrs[familyOf(ep.addr)] = []netip.Addr{ep.addr}
			add(ep.label+"."+c.name+"."+base, p, addrs)
		}
	}
	if n := len(a.Answer); n > 1 {
		for _, rr := range a.Answer {
			rr.(*dns.SRV).Weight = uint16(max(1, 100/n))
		}
	}
	return a
}
