package globalnet

import (
	"net/netip"
	"slices"
	"strconv"

	"github.com/google/nftables/expr"
	"github.com/straitnet/strait/nodeagent/kernel"
)

// Names in the table "strait".
const (
	Table          = "strait"
	LocalSet       = "gn-local"      // this cluster's pod and service CIDRs
	RemoteSet      = "gn-remote"     // remote global CIDRs
	EgressMap      = "gn-egress"     // index → egress IP
	PodSNATMap     = "gn-pod-snat"   // pod IP → its global IP
	PodDNATMap     = "gn-pod-dnat"   // a pod's global IP → the pod (the port is kept)
	DNATMap        = "gn-svc-dnat"   // a service's global IP → its one endpoint
	SlotDNATMap    = "gn-svc-slots"  // a service's global IP . slot → endpoint, for several
	StickyDNATMap  = "gn-svc-sticky" // the same for a service with ClientIP affinity: slot by source
	PortDNATMap    = "gn-svc-port"   // a service's global IP . port → the endpoints' target port
	PreroutingNAT  = "gn-ingress"
	PostroutingNAT = "gn-egress"
	// EgressPriority runs the egress SNAT before every other source NAT on the node:
	// the route agent's identity mapping for remote traffic (90, route.SourceChain), and
	// at srcnat (100) kube-proxy's and the CNI's masquerades, which would otherwise take
	// a pod's connection to a remote global IP first (the first NAT chain that binds a
	// mapping ends the hook's walk) and send it from the node's own address.
	EgressPriority = 80
	// Slots per load-balanced service; an endpoint fills Slots/len(endpoints) of them.
	Slots = 16
	// hashSeed keeps the egress IP of a source stable across restarts.
	hashSeed = 0x5357
)

// Ingress is one global IP of this cluster and where it leads.
type Ingress struct {
	GlobalIP netip.Addr
	// Endpoints are the ready pod IPs behind it: one for a headless service's pod, the
	// ready endpoints of a ClusterSetIP service.
	Endpoints []netip.Addr
	// Pod: the global IP is one pod's own (headless), so the pod's egress is SNATed to it
	// and traffic keeps its port.
	Pod bool
	// Ports of a service: traffic to GlobalIP:Port goes to an endpoint's Target port; a
	// port not listed is not translated.
	Ports []Port
	// Sticky: the service has ClientIP session affinity, so one source (a remote
	// cluster's egress IP) keeps reaching one endpoint, as kube-proxy would keep it.
	Sticky bool
}

// Port is one port of a service and its endpoints' target port.
type Port struct{ Port, Target uint16 }

// Input is everything the NAT depends on.
type Input struct {
	LocalCIDRs        []netip.Prefix
	RemoteGlobalCIDRs []netip.Prefix
	EgressIPs         []netip.Addr
	Ingress           []Ingress
}

// Compute is the globalnet part of the active gateway's state; empty without egress IPs
// (globalnet off) or without remote global CIDRs.
func Compute(in Input) kernel.State {
	egress := slices.Clone(in.EgressIPs)
	slices.SortFunc(egress, netip.Addr.Compare)
	egress = slices.Compact(egress)
	if len(egress) == 0 || len(in.RemoteGlobalCIDRs) == 0 {
		return kernel.State{}
	}
	t := &kernel.NFTable{Name: Table}
	t.Sets = append(t.Sets,
		kernel.NFTSet{Name: LocalSet, Key: "ipv4_addr", Interval: true, Elements: kernel.IntervalElements(in.LocalCIDRs)},
		kernel.NFTSet{Name: RemoteSet, Key: "ipv4_addr", Interval: true, Elements: kernel.IntervalElements(in.RemoteGlobalCIDRs)},
	)
	em := kernel.NFTSet{Name: EgressMap, Key: "integer", Value: "ipv4_addr"}
	for i, a := range egress {
		em.Elements = append(em.Elements, kernel.NFTElement{Key: strconv.Itoa(i), Value: a.String()})
	}
	podSNAT := kernel.NFTSet{Name: PodSNATMap, Key: "ipv4_addr", Value: "ipv4_addr"}
	podDNAT := kernel.NFTSet{Name: PodDNATMap, Key: "ipv4_addr", Value: "ipv4_addr"}
	dnat := kernel.NFTSet{Name: DNATMap, Key: "ipv4_addr", Value: "ipv4_addr"}
	slots := kernel.NFTSet{Name: SlotDNATMap, Key: "ipv4_addr . mark", Value: "ipv4_addr"}
	sticky := kernel.NFTSet{Name: StickyDNATMap, Key: "ipv4_addr . mark", Value: "ipv4_addr"}
	ports := kernel.NFTSet{Name: PortDNATMap, Key: "ipv4_addr . inet_service", Value: "inet_service"}
	seenPod := map[netip.Addr]bool{}
	ingress := slices.Clone(in.Ingress)
	slices.SortFunc(ingress, func(a, b Ingress) int { return a.GlobalIP.Compare(b.GlobalIP) })
	ingress = slices.CompactFunc(ingress, func(a, b Ingress) bool { return a.GlobalIP == b.GlobalIP })
	for _, ing := range ingress {
		eps := slices.Clone(ing.Endpoints)
		slices.SortFunc(eps, netip.Addr.Compare)
		eps = slices.Compact(eps)
		switch {
		case len(eps) == 0:
			continue
		case ing.Pod:
			podDNAT.Elements = append(podDNAT.Elements, kernel.NFTElement{Key: ing.GlobalIP.String(), Value: eps[0].String()})
			if !seenPod[eps[0]] {
				seenPod[eps[0]] = true
				podSNAT.Elements = append(podSNAT.Elements, kernel.NFTElement{Key: eps[0].String(), Value: ing.GlobalIP.String()})
			}
		case len(eps) == 1:
			dnat.Elements = append(dnat.Elements, kernel.NFTElement{Key: ing.GlobalIP.String(), Value: eps[0].String()})
		default:
			m := &slots
			if ing.Sticky {
				m = &sticky
			}
			for s := range Slots {
				m.Elements = append(m.Elements, kernel.NFTElement{
					Key: ing.GlobalIP.String() + " . " + strconv.Itoa(s), Value: eps[s%len(eps)].String()})
			}
		}
		if !ing.Pod {
			seenPort := map[uint16]bool{}
			for _, p := range ing.Ports {
				if !seenPort[p.Port] {
					seenPort[p.Port] = true
					ports.Elements = append(ports.Elements, kernel.NFTElement{
						Key: ing.GlobalIP.String() + " . " + strconv.Itoa(int(p.Port)), Value: strconv.Itoa(int(p.Target))})
				}
			}
		}
	}
	t.Sets = append(t.Sets, em, podSNAT, podDNAT, dnat, slots, sticky, ports)
	t.Chains = []kernel.NFTChain{
		{Name: PreroutingNAT, Type: "nat", Hook: "prerouting", Priority: -110, Rules: []kernel.NFTRule{
			rule("ip saddr @"+RemoteSet+" dnat to ip daddr map @"+PodDNATMap,
				kernel.SaddrInSet(RemoteSet), kernel.DNATDaddrMap(PodDNATMap)),
			rule("ip saddr @"+RemoteSet+" dnat to ip daddr map @"+DNATMap+" : ip daddr . th dport map @"+PortDNATMap,
				kernel.SaddrInSet(RemoteSet), kernel.DNATDaddrPortMap(DNATMap, PortDNATMap)),
			rule("ip saddr @"+RemoteSet+" dnat to ip daddr . numgen random mod "+strconv.Itoa(Slots)+" map @"+SlotDNATMap+
				" : ip daddr . th dport map @"+PortDNATMap,
				kernel.SaddrInSet(RemoteSet), kernel.DNATDaddrSlotPortMap(SlotDNATMap, Slots, PortDNATMap)),
			rule("ip saddr @"+RemoteSet+" dnat to ip daddr . jhash ip saddr mod "+strconv.Itoa(Slots)+" seed "+strconv.Itoa(hashSeed)+
				" map @"+StickyDNATMap+" : ip daddr . th dport map @"+PortDNATMap,
				kernel.SaddrInSet(RemoteSet), kernel.DNATDaddrHashSlotPortMap(StickyDNATMap, Slots, hashSeed, PortDNATMap)),
		}},
		{Name: PostroutingNAT, Type: "nat", Hook: "postrouting", Priority: EgressPriority, Rules: []kernel.NFTRule{
			rule("ip daddr @"+RemoteSet+" ip saddr @"+PodSNATMap+" snat to ip saddr map @"+PodSNATMap,
				kernel.DaddrInSet(RemoteSet), kernel.SNATSaddrMap(PodSNATMap)),
			rule("ip daddr @"+RemoteSet+" ip saddr @"+LocalSet+" snat to jhash ip saddr mod "+strconv.Itoa(len(egress))+" map @"+EgressMap,
				kernel.DaddrInSet(RemoteSet), kernel.SaddrInSet(LocalSet), kernel.SNATHashMap(EgressMap, uint32(len(egress)), hashSeed)),
		}},
	}
	return kernel.State{NFT: t}
}

func rule(text string, parts ...[]expr.Any) kernel.NFTRule {
	r := kernel.NFTRule{Text: text}
	for _, p := range parts {
		r.Exprs = append(r.Exprs, p...)
	}
	return r
}
