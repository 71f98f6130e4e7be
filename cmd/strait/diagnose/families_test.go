package diagnose

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/probe"
	"github.com/straitnet/strait/nodeagent/route"
)

// dualStack makes twoMembers' c1 and c2 dual-stack: IPv6 pod and service CIDRs in their
// Memberships, an IPv6 pod CIDR on every node, both chains tables on every node.
func dualStack(ms ...*member) {
	for i, m := range ms {
		six := "fd10:1ab:0:80" + string(rune('0'+i))
		m.membership.Spec.PodCIDRs = append(m.membership.Spec.PodCIDRs, six+"0::/56")
		m.membership.Spec.ServiceCIDRs = append(m.membership.Spec.ServiceCIDRs, "fd10:1ab:0:10"+string(rune('0'+i))+"::/112")
		for j := range m.nodes {
			m.nodes[j].Spec.PodCIDRs = append(m.nodes[j].Spec.PodCIDRs, six+string(rune('1'+j))+"::/64")
		}
		for n, f := range m.facts {
			f.StraitChains6 = []string{route.MSSChain, route.SourceChain}
			m.facts[n] = f
		}
	}
}

func pod(name, node string, ips ...string) probePod {
	return probePod{name: name, node: node, ip: ips[0], ips: ips}
}

// TestCNIJudgesEachFamily: a dual-stack member passes naming both families; a node
// without an IPv6 pod CIDR and a probe pod without an IPv6 address fail naming the
// family and the field; an IPv6 masquerade fails in IPv6 alone, naming table ip6 strait.
func TestCNIJudgesEachFamily(t *testing.T) {
	c1, c2 := twoMembers()
	dualStack(c1, c2)
	gw, plain := pod("p1", "c1-gw", "10.8.1.4", "fd10:1ab:0:8001::4"), pod("p2", "c1-node", "10.8.2.4", "fd10:1ab:0:8002::4")
	to := pod("q", "c2-node", "10.9.2.5", "fd10:1ab:0:8012::5")
	var acrosses []across
	for _, p := range []probePod{gw, plain} {
		for _, f := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
			from, _ := p.inFamily(f)
			dst, _ := to.inFamily(f)
			acrosses = append(acrosses, across{from: "c1", to: "c2", family: f, fromPod: from, toPod: dst, arrived: []string{from.ip}})
		}
	}
	o := observed{members: []*member{c1, c2}, across: acrosses, probes: map[string][]probePod{"c1": {gw, plain}}}
	r := cni(c1, o)
	if r.Status != Pass || !strings.Contains(r.Detail, "IPv4: the pod's own address arrives in the other members, from c1-gw, c1-node") ||
		!strings.Contains(r.Detail, "IPv6: the pod's own address arrives in the other members, from c1-gw, c1-node") {
		t.Errorf("healthy dual-stack: %+v", r)
	}

	o.across[3].arrived = []string{"fd10:1ab:0:1::c"} // c1-node's IPv6 probe masqueraded
	c1.facts["c1-node"] = probe.NodeFacts{StraitChains: []string{route.SourceChain}, StraitChains6: []string{route.MSSChain}}
	r = cni(c1, o)
	if r.Status != Fail || !strings.Contains(r.Detail, "IPv6: remote traffic is masqueraded: from pod fd10:1ab:0:8002::4 on c1-node") ||
		strings.Contains(r.Detail, "IPv4: remote traffic") || !strings.Contains(r.Fix, "nftables chain ip6 strait keep-remote-source") {
		t.Errorf("IPv6 masqueraded on c1-node: %+v", r)
	}
	// Nothing arrives; the node's IPv6 conntrack saw the probe leave as its vx-strait
	// address.
	o.across[3].arrived, o.across[3].dialErr = nil, errTimeout
	c1.flows = map[string][]probe.Flow{"c1-node": {{Protocol: 17, Src: "fd10:1ab:0:8002::4", Dst: "fd10:1ab:0:8012::5", ReplyDst: "fd53:7472:6169::afa:80d"}}}
	if r := cni(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv6: remote traffic is masqueraded: from pod fd10:1ab:0:8002::4 on c1-node to c2's pod fd10:1ab:0:8012::5: left node c1-node as fd53:7472:6169::afa:80d (vx-strait of node c1/c1-node)") {
		t.Errorf("IPv6 masqueraded, nothing arrived: %+v", r)
	}
	c1.flows, o.across[3].dialErr = nil, nil
	o.across[3].arrived = []string{plain.ipOf(corev1.IPv6Protocol)}

	c1.nodes[1].Spec.PodCIDRs = c1.nodes[1].Spec.PodCIDRs[:1]
	o.probes["c1"][1] = pod("p2", "c1-node", "10.8.2.4")
	r = cni(c1, o)
	if r.Status != Fail || !strings.Contains(r.Detail, "IPv6: node c1-node has no IPv6 pod CIDR (spec.podCIDRs 10.8.2.0/24)") ||
		!strings.Contains(r.Detail, "IPv6: pod p2 on c1-node has no IPv6 address (status.podIPs 10.8.2.4)") || !strings.Contains(r.Fix, "--cluster-cidr") {
		t.Errorf("c1-node without IPv6: %+v", r)
	}

	// An IPv4-only member's line is what it always was: no family named.
	a, b := twoMembers()
	o = observed{members: []*member{a, b}, across: []across{{from: "c1", to: "c2", family: corev1.IPv4Protocol, fromPod: pod("p", "c1-gw", "10.8.1.4"), toPod: pod("q", "c2-node", "10.9.2.5"), arrived: []string{"10.8.1.4"}}}}
	if r := cni(a, o); r.Status != Pass || r.Detail != "the pod's own address arrives in the other members, from c1-gw" {
		t.Errorf("IPv4 alone: %+v", r)
	}
}

// TestMTUJudgesEachFamily: the path MTU into the other member in each family, an IPv6
// black hole named with IPv6's 48 bytes of headers, and an IPv6 path under 1280.
func TestMTUJudgesEachFamily(t *testing.T) {
	c1, c2 := twoMembers()
	dualStack(c1, c2)
	from := pod("p", "c1-node", "10.8.2.4", "fd10:1ab:0:8002::4")
	to := pod("q", "c2-node", "10.9.2.5", "fd10:1ab:0:8012::5")
	mk := func(f corev1.IPFamily, m probe.MTU) across {
		a, _ := from.inFamily(f)
		b, _ := to.inFamily(f)
		return across{from: "c1", to: "c2", family: f, fromPod: a, toPod: b, mtu: &m}
	}
	o := observed{members: []*member{c1, c2}, across: []across{
		mk(corev1.IPv4Protocol, probe.MTU{PathMTU: 1420, Small: true, FullAnswered: true}),
		mk(corev1.IPv6Protocol, probe.MTU{PathMTU: 1420, Small: true, FullAnswered: true}),
	}}
	if r := mtu(c1, o); r.Status != Pass || !strings.Contains(r.Detail, "IPv4: from c1-node to c2's pod 10.9.2.5: path MTU 1420") ||
		!strings.Contains(r.Detail, "IPv6: from c1-node to c2's pod fd10:1ab:0:8012::5: path MTU 1420") {
		t.Errorf("both families cross: %+v", r)
	}
	o.across[1].mtu.FullAnswered = false
	if r := mtu(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv6: from c1-node to c2's pod fd10:1ab:0:8012::5: datagrams of the path MTU 1420 (1372 bytes of data, 48 of IPv6 and UDP headers) with don't fragment vanish while small ones cross") ||
		strings.Contains(r.Detail, "IPv4: from c1-node to c2's pod 10.9.2.5: datagrams") || !strings.Contains(r.Fix, "packet-too-big") {
		t.Errorf("an IPv6 black hole: %+v", r)
	}
	o.across[1].mtu = &probe.MTU{PathMTU: 1200, Small: true, FullAnswered: true}
	if r := mtu(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv6: from c1-node to c2's pod fd10:1ab:0:8012::5: path MTU 1200, less than the 1280 IPv6 needs") {
		t.Errorf("an IPv6 path under 1280: %+v", r)
	}
}

// TestFirewallFindsDropsAndFencesPerFamily: a rule that drops the cable's port in the
// family the cable runs in, or vx-strait's in the nodes' family, fails naming the table,
// chain and family; one in a family the traffic does not use does not; the active
// gateway's fence that no longer holds the port fails.
func TestFirewallFindsDropsAndFencesPerFamily(t *testing.T) {
	c1, c2 := twoMembers()
	dualStack(c1, c2)
	for _, m := range []*member{c1, c2} {
		m.membership.Spec.Cable.Port = 51871
		m.gateways = []straitv1.Gateway{{Spec: straitv1.GatewaySpec{NodeName: m.name + "-gw", HAState: straitv1.HAActive, IP: "198.18.0.1", Port: 51871}}}
	}
	now := time.Now()
	hs := metav1.NewTime(now.Add(-10 * time.Second))
	c1.peers = []straitv1.Peer{{Spec: straitv1.PeerSpec{ClusterID: "c2"}, Status: straitv1.PeerStatus{State: "Connected", LastHandshake: &hs}}}
	o := observed{members: []*member{c1, c2}, now: now}
	facts := func(node string, change func(*probe.NodeFacts)) {
		f := c1.facts[node]
		change(&f)
		c1.facts[node] = f
	}
	facts("c1-gw", func(f *probe.NodeFacts) {
		f.Fences = []probe.Fence{{Family: "ip", Ports: []int{51871}}, {Family: "ip6", Ports: []int{}}}
		f.Drops = []probe.Drop{{Family: "ip6", Table: "site", Chain: "input", Handle: 4, Port: 51871, Verdict: "drop"}}
	})
	r := firewall(c1, o)
	if r.Status != Pass || !strings.Contains(r.Detail, "no rule drops UDP 51871 or 4804 on 2 nodes") || !strings.Contains(r.Detail, "the fence (ip, ip6) lets 51871 through on c1-gw") {
		t.Errorf("an IPv6 drop and an empty ip6 fence beside a cable over IPv4: %+v", r)
	}
	facts("c1-node", func(f *probe.NodeFacts) { f.LegacyTables = []string{"ip filter"} })
	if r := firewall(c1, o); !strings.Contains(r.Detail, "legacy iptables tables, whose rules are not read, on c1-node (ip filter)") {
		t.Errorf("legacy iptables on c1-node: %+v", r)
	}
	facts("c1-node", func(f *probe.NodeFacts) { f.LegacyTables = nil })
	c1.gateways[0].Spec.IP = "fd10:1ab:0:200::b" // the cable over IPv6
	r = firewall(c1, o)
	if r.Status != Fail || !strings.Contains(r.Detail, "IPv6: node c1-gw drops UDP 51871, the cable's port: table ip6 site chain input (rule handle 4, drop)") ||
		!strings.Contains(r.Detail, "IPv6: the fence on the active gateway c1-gw drops UDP 51871: set term of table ip6 strait-fence holds nothing") ||
		strings.Contains(r.Detail, "IPv4:") || !strings.Contains(r.Fix, "nft -a list table") {
		t.Errorf("the cable over IPv6: %+v", r)
	}
	c1.gateways[0].Spec.IP = "198.18.0.1"
	facts("c1-gw", func(f *probe.NodeFacts) { f.Drops, f.Fences = nil, nil })
	facts("c1-node", func(f *probe.NodeFacts) {
		f.Drops = []probe.Drop{{Family: "inet", Table: "site", Chain: "forward", Handle: 7, Port: route.Port, Verdict: "reject"}}
	})
	if r := firewall(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv4: node c1-node drops UDP 4804, vx-strait's") {
		t.Errorf("vx-strait rejected on c1-node (an inet table, nodes on IPv4): %+v", r)
	}
}

// TestDNSJudgesARecordsAndAAAARecords: an IPv4-only service's AAAA must be NOERROR with
// no answer (NXDOMAIN fails); a dual-stack service's AAAA must be answered.
func TestDNSJudgesARecordsAndAAAARecords(t *testing.T) {
	c1, c2 := twoMembers()
	c1.corefile = corefile.BeginMarker + "\n" + corefile.EndMarker + "\n"
	name := "whereami-cs.sample.svc.clusterset.local"
	l := lookup{name: name, pod: "p", addrs: []string{"10.99.0.7"}, families: []corev1.IPFamily{corev1.IPv4Protocol}, records: []probe.Records{
		{Type: "A", Rcode: "NOERROR", Addresses: []string{"10.99.0.7"}}, {Type: "AAAA", Rcode: "NOERROR"}}}
	o := observed{members: []*member{c1, c2}, lookups: map[string][]lookup{"c1": {l}}}
	if r := dnsCheck(c1, o); r.Status != Pass || !strings.Contains(r.Detail, name+" A 10.99.0.7, AAAA none (NOERROR)") {
		t.Errorf("an IPv4-only service: %+v", r)
	}
	o.lookups["c1"][0].records[1].Rcode = "NXDOMAIN"
	if r := dnsCheck(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv6: AAAA "+name+" (ServiceImport ipFamilies IPv4) is NXDOMAIN, want NOERROR with no answer") {
		t.Errorf("NXDOMAIN for the AAAA of an IPv4-only service: %+v", r)
	}
	o.lookups["c1"][0].records[1].Rcode = "NOERROR"
	o.lookups["c1"][0].families = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	if r := dnsCheck(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv6: AAAA "+name+" (ServiceImport ipFamilies IPv4,IPv6) is NOERROR with no answer, want the service's IPv6 addresses") {
		t.Errorf("a dual-stack service without AAAA: %+v", r)
	}
	o.lookups["c1"][0].records[1].Addresses = []string{"fd10:1ab:0:100::7"}
	if r := dnsCheck(c1, o); r.Status != Pass || !strings.Contains(r.Detail, "A 10.99.0.7, AAAA fd10:1ab:0:100::7") {
		t.Errorf("a dual-stack service answered in both: %+v", r)
	}
	// An IPv6-only service: its A must be NOERROR with no answer.
	o.lookups["c1"][0].families = []corev1.IPFamily{corev1.IPv6Protocol}
	o.lookups["c1"][0].records[0] = probe.Records{Type: "A", Rcode: "NXDOMAIN"}
	if r := dnsCheck(c1, o); r.Status != Fail || !strings.Contains(r.Detail, "IPv4: A "+name+" (ServiceImport ipFamilies IPv6) is NXDOMAIN, want NOERROR with no answer") {
		t.Errorf("NXDOMAIN for the A of an IPv6-only service: %+v", r)
	}
	o.lookups["c1"][0].records[0] = probe.Records{Type: "A", Rcode: "NOERROR"}
	if r := dnsCheck(c1, o); r.Status != Pass || !strings.Contains(r.Detail, name+" A none (NOERROR), AAAA fd10:1ab:0:100::7") {
		t.Errorf("an IPv6-only service: %+v", r)
	}
}

// TestVerifyConnectsOnlyInSharedFamilies: an IPv4-only and an IPv6-only member share no
// family: verify says so rather than dialling across families.
func TestVerifyConnectsOnlyInSharedFamilies(t *testing.T) {
	c1, c2 := twoMembers()
	c2.membership.Spec.PodCIDRs = []string{"fd10:1ab:0:8100::/56"}
	obs := observed{members: []*member{c1, c2}, probes: map[string][]probePod{
		"c1": {pod("p", "c1-node", "10.8.2.4")}, "c2": {pod("q", "c2-node", "fd10:1ab:0:8102::5")}}}
	for _, r := range verifyConnections(context.Background(), obs, map[string][]string{}) {
		if r.Status != Fail || !strings.Contains(r.Detail, "share no IP family (c1: IPv4; c2: IPv6)") && !strings.Contains(r.Detail, "share no IP family (c2: IPv6; c1: IPv4)") {
			t.Errorf("%s: %+v", r.Cluster, r)
		}
	}
}

// TestAnOlderProbeIsAskedWithoutTheNewFlags: daemons of an older build than this strait
// refuse lookup's --records and node's --udp-ports; each probe is asked again without
// them, and judged on what it tells (the addresses alone, the facts without rules).
func TestAnOlderProbeIsAskedWithoutTheNewFlags(t *testing.T) {
	c1, _ := twoMembers()
	c1.timeouts = short
	c1.imports = []mcsv1.ServiceImport{{ObjectMeta: metav1.ObjectMeta{Namespace: "sample", Name: "whereami-cs"},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}}
	var mu sync.Mutex
	var asked []string
	c1.execFn = func(_ context.Context, _, _ string, argv []string, answered func()) ([]byte, error) {
		answered()
		mu.Lock()
		asked = append(asked, strings.Join(argv, " "))
		mu.Unlock()
		if slices.Contains(argv, "--records") || slices.Contains(argv, "--udp-ports") {
			return nil, errors.New("unknown flag: " + argv[3])
		}
		if argv[2] == "lookup" {
			return []byte(`{"addresses":["10.99.0.7"]}`), nil
		}
		return []byte(`{"kubeProxy":{"mode":"nftables"}}`), nil
	}
	ctx := context.Background()
	ls := lookups(ctx, c1, []probePod{pod("p", "c1-node", "10.8.2.4")})
	if len(ls) != 1 || ls[0].err != nil || !slices.Equal(ls[0].addrs, []string{"10.99.0.7"}) {
		t.Fatalf("lookups: %+v", ls)
	}
	if _, wrong, _ := judgeRecords(ls[0]); len(wrong) > 0 {
		t.Errorf("the addresses alone: %v", wrong)
	}
	readFacts(ctx, []*member{c1})
	if f, ok := c1.facts["c1-gw"]; !ok || f.KubeProxy.Mode != "nftables" {
		t.Errorf("facts of c1-gw: %+v (%v)", f, c1.factsErr)
	}
	if !slices.Contains(asked, "/straitd probe lookup whereami-cs.sample.svc.clusterset.local") || !slices.Contains(asked, "/straitd probe node") {
		t.Errorf("asked %q; want each probe again without the new flag", asked)
	}
}
