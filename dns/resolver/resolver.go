package resolver

import (
	"net/netip"
	"slices"
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
	e := s.services[ServiceKey{l[n-3], l[n-2]}]
	if e == nil {
		return q.nxDomain()
	}
	// ord are the service's sources that answer, local first (Entry.ordered).
	var buf [8]*source
	q.e = e
	ord := e.ordered(s, buf[:0])
	if len(ord) == 0 {
		return q.nxDomain()
	}
	srv := n >= 5 && isUnderscored(l[0]) && isUnderscored(l[1])
	switch {
	case n == 3 && q.qtype == dns.TypeSRV:
		return q.bareSRV(ord)
	case n == 3:
		return q.addresses(ord, nil, "")
	case n == 4 && s.cfg.ClusterNames && !isUnderscored(l[0]):
		return q.cluster(ord, find(ord, l[0]), "")
	case n == 5 && srv:
		return q.srv(ord, nil, l[0][1:], l[1][1:])
	case n == 5 && e.headless && !isUnderscored(l[0]):
		return q.cluster(ord, find(ord, l[1]), l[0])
	case n == 6 && srv && s.cfg.ClusterNames:
		c := find(ord, l[2])
		if c == nil {
			return q.nxDomain()
		}
		return q.srv(ord, c, l[0][1:], l[1][1:])
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
	// e is the service asked about.
	e *Entry
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

// addresses answers with the addresses of the asked families: of the service name when
// c is nil, else of c, or of c's endpoints named label when label is not empty. It is
// NODATA when there are none.
func (q *query) addresses(ord []*source, c *source, label string) Answer {
	fs, ok := families(q.qtype)
	if !ok {
		return q.noData()
	}
	var out []dns.RR
	var buf [4]netip.Addr
	for _, f := range fs {
		out = q.appendAddrs(out, q.qname, q.addrsOf(ord, buf[:0], c, label, f))
	}
	if len(out) == 0 {
		return q.noData()
	}
	return Answer{Answer: out}
}

func (q *query) addrsOf(ord []*source, dst []netip.Addr, c *source, label string, f family) []netip.Addr {
	switch {
	case c == nil:
		return q.pick(ord, f, dst)
	case label != "":
		return q.e.appendLabelled(dst, c, f, label)
	}
	return q.e.appendAddrs(dst, c, f)
}

// appendAddrs appends an A or AAAA record for each of addrs, named owner, to out. Each
// record takes one allocation, its address included; so does the first record's slice.
func (q *query) appendAddrs(out []dns.RR, owner string, addrs []netip.Addr) []dns.RR {
	for _, a := range addrs {
		h := dns.RR_Header{Name: owner, Class: dns.ClassINET, Ttl: q.s.cfg.TTL}
		var rr dns.RR
		var first *[1]dns.RR
		if a.Is4() {
			r := &aRecord{ip: a.As4()}
			h.Rrtype = dns.TypeA
			r.rr = dns.A{Hdr: h, A: r.ip[:]}
			rr, first = &r.rr, &r.out
		} else {
			r := &aaaaRecord{ip: a.As16()}
			h.Rrtype = dns.TypeAAAA
			r.rr = dns.AAAA{Hdr: h, AAAA: r.ip[:]}
			rr, first = &r.rr, &r.out
		}
		if out == nil {
			first[0] = rr
			out = first[:]
			continue
		}
		out = append(out, rr)
	}
	return out
}

// aRecord is an A record with the bytes of its address, and room for a slice of one
// record, allocated together.
type aRecord struct {
	rr  dns.A
	ip  [4]byte
	out [1]dns.RR
}

// aaaaRecord is aRecord for AAAA.
type aaaaRecord struct {
	rr  dns.AAAA
	ip  [16]byte
	out [1]dns.RR
}

// find is the source in ord of the cluster named name, nil when there is none.
func find(ord []*source, name string) *source {
	for _, c := range ord {
		if c.cluster == name {
			return c
		}
	}
	return nil
}

// pick appends the answer for a service name to dst: for ClusterSetIP its clusterset
// IPs, or with LocalFirst (or before the IPs are written) the local cluster's
// addresses when it has any, else the next connected cluster's in turn; for headless
// every published endpoint, local ones first.
func (q *query) pick(ord []*source, f family, dst []netip.Addr) []netip.Addr {
	e := q.e
	if !e.headless && !q.s.cfg.LocalFirst && len(e.ips) > 0 {
		for _, a := range e.ips {
			if familyOf(a) == f {
				dst = append(dst, a.Unmap())
			}
		}
		return dst
	}
	if e.headless {
		for _, c := range ord {
			dst = e.appendAddrs(dst, c, f)
		}
		return dst
	}
	if ord[0].cluster == q.s.local {
		if e.count(ord[0], f) > 0 {
			return e.appendAddrs(dst, ord[0], f)
		}
		ord = ord[1:]
	}
	start := len(dst)
	for _, c := range ord {
		dst = e.appendAddrs(dst, c, f)
	}
	n := len(dst) - start
	if n == 0 {
		return dst
	}
	dst[start] = dst[start+int((e.rr[f].Add(1)-1)%uint64(n))]
	return dst[:start+1]
}

// cluster answers <cluster>.<svc>.<ns>.svc.<zone> (label empty) or, of a headless
// service, <label>.<cluster>.<svc>.<ns>.svc.<zone>; c is that cluster's answering source.
func (q *query) cluster(ord []*source, c *source, label string) Answer {
	if c == nil {
		return q.nxDomain()
	}
	if label != "" {
		var buf [4]netip.Addr
		if len(q.e.appendLabelled(q.e.appendLabelled(buf[:0], c, v4, label), c, v6, label)) == 0 {
			return q.nxDomain()
		}
	}
	return q.addresses(ord, c, label)
}

// appendLabelled appends the answerable addresses of family f of c's endpoints named
// label to dst.
func (e *Entry) appendLabelled(dst []netip.Addr, c *source, f family, label string) []netip.Addr {
	for i := range c.eps {
		ep := &c.eps[i]
		if e.answerable(c, ep) && familyOf(ep.Addr) == f && hasLabel(ep, label) {
			dst = append(dst, ep.Addr.Unmap())
		}
	}
	return dst
}

// hasLabel says whether label (lower case) names ep: its hostname, or its dashed address
// when it has none.
func hasLabel(ep *Endpoint, label string) bool {
	if ep.Hostname != "" {
		return strings.EqualFold(ep.Hostname, label)
	}
	var buf [64]byte
	return string(appendDashed(buf[:0], ep.Addr.Unmap())) == label
}

// labelOf is ep's DNS label: its hostname in lower case, or its dashed address.
func labelOf(ep *Endpoint) string {
	if ep.Hostname != "" {
		return strings.ToLower(ep.Hostname)
	}
	return string(appendDashed(nil, ep.Addr.Unmap()))
}

// appendDashed appends the label of an endpoint without hostname: 10-1-2-3, or fd00--1
// for IPv6.
func appendDashed(dst []byte, a netip.Addr) []byte {
	start := len(dst)
	dst = a.AppendTo(dst)
	sep := byte(':')
	if a.Is4() {
		sep = '.'
	}
	for i := start; i < len(dst); i++ {
		if dst[i] == sep {
			dst[i] = '-'
		}
	}
	return dst
}

// srv answers _<port>._<proto>.[<cluster>.]<svc>.<ns>.svc.<zone>: for ClusterSetIP one
// record targeting the service (or cluster) name, for headless one per endpoint
// targeting its per-endpoint name, with the targets' addresses as additional records.
func (q *query) srv(ord []*source, only *source, portName, proto string) Answer {
	e := q.e
	var port *Port
	for i := range e.ports {
		p := &e.ports[i]
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
	var a Answer
	q.appendSRV(&a, ord, only, port, map[targetAddr]bool{})
	q.weigh(&a)
	return a
}

// bareSRV answers an SRV question for <svc>.<ns>.svc.<zone> itself, as CoreDNS's
// kubernetes plugin does for a cluster service: the records of every port of the
// service, named or not, with the targets' addresses once each, and one record per
// target and port number (a port served over TCP and UDP, as DNS's 53 is, is one
// record, since an SRV record names no protocol; CoreDNS drops the duplicate too).
func (q *query) bareSRV(ord []*source) Answer {
	var a Answer
	seen := map[targetAddr]bool{}
	for i := range q.e.ports {
		q.appendSRV(&a, ord, nil, &q.e.ports[i], seen)
	}
	type targetPort struct {
		target string
		port   uint16
	}
	once := map[targetPort]bool{}
	kept := a.Answer[:0]
	for _, rr := range a.Answer {
		srv := rr.(*dns.SRV)
		if k := (targetPort{srv.Target, srv.Port}); !once[k] {
			once[k] = true
			kept = append(kept, rr)
		}
	}
	a.Answer = kept
	if len(a.Answer) == 0 {
		return q.noData()
	}
	q.weigh(&a)
	return a
}

// targetAddr is an SRV target and one of its addresses, as the additional section
// holds it.
type targetAddr struct {
	target string
	addr   netip.Addr
}

// appendSRV appends the SRV records of port to a: for ClusterSetIP one targeting the
// service (or only's cluster) name, for headless one per endpoint name (an endpoint of
// a dual-stack member comes once per family, under one name: one record); the
// addresses of targets not in seen go to the additional section.
func (q *query) appendSRV(a *Answer, ord []*source, only *source, port *Port, seen map[targetAddr]bool) {
	e := q.e
	key := e.Key()
	base := key.Name + "." + key.Namespace + ".svc." + q.zone
	first := len(a.Answer)
	add := func(target string, p uint16, v4s, v6s []netip.Addr) {
		if !slices.ContainsFunc(a.Answer[first:], func(rr dns.RR) bool { return rr.(*dns.SRV).Target == target }) {
			a.Answer = append(a.Answer, &dns.SRV{Hdr: q.hdr(dns.TypeSRV), Priority: 0, Weight: 100, Port: p, Target: target})
		}
		for _, addrs := range [2][]netip.Addr{v4s, v6s} {
			for i, ad := range addrs {
				if k := (targetAddr{target, ad}); !seen[k] {
					seen[k] = true
					a.Extra = q.appendAddrs(a.Extra, target, addrs[i:i+1])
				}
			}
		}
	}
	if !e.headless {
		var b4, b6 [4]netip.Addr
		if only != nil {
			add(only.cluster+"."+base, port.Port, e.appendAddrs(b4[:0], only, v4), e.appendAddrs(b6[:0], only, v6))
		} else {
			add(base, port.Port, q.pick(ord, v4, b4[:0]), q.pick(ord, v6, b6[:0]))
		}
		return
	}
	for _, c := range ord {
		if only != nil && c != only {
			continue
		}
		p := port.Port
		for _, cp := range c.ports {
			if strings.EqualFold(cp.Name, port.Name) && strings.EqualFold(cp.Protocol, port.Protocol) {
				p = cp.Port
			}
		}
		for i := range c.eps {
			ep := &c.eps[i]
			if !e.answerable(c, ep) {
				continue
			}
			addr := []netip.Addr{ep.Addr.Unmap()}
			target := labelOf(ep) + "." + c.cluster + "." + base
			if familyOf(ep.Addr) == v4 {
				add(target, p, addr, nil)
			} else {
				add(target, p, nil, addr)
			}
		}
	}
}

// weigh spreads the weight of several records of a headless service evenly.
func (q *query) weigh(a *Answer) {
	if n := len(a.Answer); n > 1 && q.e.headless {
		for _, rr := range a.Answer {
			rr.(*dns.SRV).Weight = uint16(max(1, 100/n))
		}
	}
}
