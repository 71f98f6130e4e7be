package diagnose

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/probe"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/plan"
)

// The checks, in the order they are run and printed.
const (
	checkK8sVersion  = "k8s-version"
	checkKubeProxy   = "kube-proxy"
	checkCNI         = "cni"
	checkMTU         = "mtu"
	checkFirewall    = "firewall"
	checkConnections = "connections"
	checkDeployment  = "deployment"
	checkDNS         = "dns"
	checkCIDRs       = "cidrs"
)

var checkNames = []string{checkK8sVersion, checkKubeProxy, checkCNI, checkMTU, checkFirewall, checkConnections, checkDeployment, checkDNS, checkCIDRs}

// Status is a check's verdict.
type Status string

// The verdicts: pass, warn (could not tell, or something to look at), fail.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check of one member.
type Result struct {
	Check   string `json:"check"`
	Cluster string `json:"cluster"`
	Status  Status `json:"status"`
	Detail  string `json:"detail"`
	// Fix says what to do, on a failure or a warning.
	Fix string `json:"fix,omitempty"`
}

// minKubernetes is the oldest Kubernetes Strait supports: the ServiceCIDR API (GA in
// 1.33) is where the service CIDR is read from.
var minKubernetes = version.MustParseGeneric("1.33.0")

// observed is everything the checks judge; expected CIDRs come from the ClusterSet file
// when one is given, else from each member's Membership (what the hub applied from it).
type observed struct {
	members  []*member
	probes   map[string][]probePod
	across   []across
	lookups  map[string][]lookup
	expected map[string]cidrs // cluster -> the ClusterSet's
	source   string           // where expected comes from: the file's name, or "Membership"
	now      time.Time
}

type cidrs struct{ pods, services []string }

// judge runs the checks asked for over what was observed.
func judge(o observed, checks []string) []Result {
	var out []Result
	for _, c := range checks {
		for _, m := range o.members {
			if m.membership == nil {
				continue
			}
			switch c {
			case checkK8sVersion:
				out = append(out, k8sVersion(m))
			case checkKubeProxy:
				out = append(out, kubeProxy(m))
			case checkCNI:
				out = append(out, cni(m, o))
			case checkMTU:
				out = append(out, mtu(m, o))
			case checkFirewall:
				out = append(out, firewall(m, o))
			case checkConnections:
				out = append(out, connections(m, o))
			case checkDeployment:
				out = append(out, deployment(m))
			case checkDNS:
				out = append(out, dnsCheck(m, o))
			case checkCIDRs:
				out = append(out, cidrCheck(m, o))
			}
		}
	}
	return out
}

func result(check string, m *member, s Status, detail, fix string) Result {
	return Result{Check: check, Cluster: m.name, Status: s, Detail: detail, Fix: fix}
}

func k8sVersion(m *member) Result {
	v, err := version.ParseGeneric(m.version)
	switch {
	case err != nil:
		return result(checkK8sVersion, m, Warn, fmt.Sprintf("version %q: %v", m.version, err), "check the API server's version by hand (kubectl version)")
	case v.LessThan(minKubernetes):
		return result(checkK8sVersion, m, Fail, fmt.Sprintf("%s, older than %s", m.version, minKubernetes),
			fmt.Sprintf("upgrade the cluster to Kubernetes %s or later", minKubernetes))
	}
	return result(checkK8sVersion, m, Pass, m.version, "")
}

func kubeProxy(m *member) Result {
	modes := map[string][]string{}
	var unread []string
	var bits []string
	for _, n := range m.nodes {
		f, ok := m.facts[n.Name]
		switch {
		case !ok && (m.nodeError(n.Name) != nil || nodeFailed(m.factsErr[n.Name])):
			// The node did not answer: the nodes line says so, and what to do.
		case !ok:
			unread = append(unread, fmt.Sprintf("%s: %v", n.Name, m.factsErr[n.Name]))
		case f.KubeProxy.Error != "":
			unread = append(unread, n.Name+": "+f.KubeProxy.Error)
		default:
			modes[f.KubeProxy.Mode] = append(modes[f.KubeProxy.Mode], n.Name)
			if b := f.KubeProxy.MasqueradeBit; b != nil {
				bits = appendNew(bits, fmt.Sprint(*b))
			}
		}
	}
	var parts []string
	for mode, nodes := range modes {
		parts = append(parts, fmt.Sprintf("%s on %s", mode, strings.Join(nodes, ", ")))
	}
	sort.Strings(parts)
	detail := strings.Join(parts, "; ")
	if len(bits) > 0 {
		detail += ", masquerade bit " + strings.Join(bits, ",")
	}
	detail += leftOut(m)
	if len(unread) > 0 {
		return result(checkKubeProxy, m, Warn, strings.Join(append([]string{detail}, unread...), "; "),
			"where kube-proxy's metrics endpoint (127.0.0.1:10249) does not answer, kube-proxy may be replaced (Cilium, kube-router) or bind elsewhere: check its mode by hand")
	}
	for mode := range modes {
		if mode != "iptables" && mode != "nftables" {
			return result(checkKubeProxy, m, Warn, detail, "Strait keeps kube-proxy's masquerade off remote traffic in iptables and nftables mode; "+mode+" mode is not tested")
		}
	}
	return result(checkKubeProxy, m, Pass, detail, "")
}

// nodeOf names the node (of any member) that owns an address.
func nodeOf(o observed, addr string) string {
	for _, m := range o.members {
		for _, n := range m.nodes {
			for _, a := range n.Status.Addresses {
				if a.Address == addr {
					return m.name + "/" + n.Name
				}
			}
		}
	}
	return ""
}

func cni(m *member, o observed) Result {
	var bad, passed, fix []string
	missing := missingFamilies(m, o)
	unmeasured := 0
	for _, f := range m.families() {
		if !sharesWithAnother(m, o, f) {
			passed = append(passed, labelled(m, f, "no other member carries "+string(f)))
			continue
		}
		var ok []string
		crossed := 0
		for _, a := range o.across {
			if a.from != m.name || a.family != f {
				continue
			}
			how, arrived := masqueraded(m, o, a)
			if !arrived {
				continue
			}
			crossed++
			if len(how) == 0 {
				ok = appendNew(ok, a.fromPod.node)
				continue
			}
			bad = append(bad, labelled(m, f, fmt.Sprintf("remote traffic is masqueraded: from pod %s on %s to %s's pod %s: %s", a.fromPod.ip, a.fromPod.node, a.to, a.toPod.ip, strings.Join(how, ", "))))
			if fx, read := m.facts[a.fromPod.node]; read {
				chains := fx.StraitChains
				if f == corev1.IPv6Protocol {
					chains = fx.StraitChains6 // an IPv6 pod's bypass is in table ip6 strait
				}
				if !contains(chains, route.SourceChain) {
					fix = appendNew(fix, fmt.Sprintf("node %s lacks the agent's masquerade bypass (nftables chain %s %s %s)", a.fromPod.node, nftFamily(f), route.NFTable, route.SourceChain))
				}
			}
		}
		if crossed == 0 {
			unmeasured++
			passed = append(passed, labelled(m, f, "no probe reached another member, so the source address could not be compared"))
			continue
		}
		if len(ok) > 0 {
			passed = append(passed, labelled(m, f, "the pod's own address arrives in the other members, from "+strings.Join(ok, ", ")))
		}
	}
	switch {
	case len(missing) > 0 || len(bad) > 0:
		var fixes []string
		if len(missing) > 0 {
			fixes = append(fixes, "every node of a member needs a pod CIDR of each family the member carries (kube-controller-manager's --cluster-cidr with a range of each, --allocate-node-cidrs; a node keeps the spec.podCIDRs it registered with, so an older node must be registered again) and the CNI must give each pod an address of each (its IPAM ranges); or take the family's ranges out of the ClusterSet")
		}
		if len(bad) > 0 {
			fixes = append(fixes, strings.Join(append(fix, "a masquerade on the way (the CNI's, kube-proxy's) rewrites the pod's address and the other cluster's answers go astray; Strait's agent keeps every masquerade off remote CIDRs with its chain "+route.SourceChain+" (priority srcnat-10, in table ip strait and, for IPv6, ip6 strait): check that the agent runs on those nodes (strait diagnose deployment) and read its log"), "; "))
		}
		return result(checkCNI, m, Fail, joinDetails(append(missing, bad...))+leftOut(m), strings.Join(fixes, "; "))
	case unmeasured > 0:
		return result(checkCNI, m, Warn, joinDetails(passed)+leftOut(m), "see the connections check")
	}
	return result(checkCNI, m, Pass, joinDetails(passed)+leftOut(m), "")
}

// masqueraded says how a probe's source was rewritten on the way (nothing when the
// pod's own address arrived), and whether it can be told at all: a masqueraded source
// may never arrive (the cable admits only the other cluster's CIDRs, or the answers go
// astray), so the conntrack of the nodes on the way says what it left with.
func masqueraded(m *member, o observed, a across) ([]string, bool) {
	arrived := a.arrived
	if len(arrived) == 0 && a.dialErr == nil {
		arrived = []string{a.seen.Seen}
	}
	translated := translations(m, a)
	if len(arrived) == 0 && len(translated) == 0 {
		return nil, false
	}
	var how, other []string
	for _, addr := range arrived {
		if addr != a.fromPod.ip {
			other = append(other, addr+" ("+whose(o, addr)+")")
		}
	}
	if len(other) > 0 {
		how = append(how, "arrived from "+strings.Join(other, ", "))
	}
	for _, t := range translated {
		how = append(how, fmt.Sprintf("left node %s as %s (%s)", t.node, t.addr, whose(o, t.addr)))
	}
	return how, true
}

// sharesWithAnother says whether another member carries family f too.
func sharesWithAnother(m *member, o observed, f corev1.IPFamily) bool {
	for _, x := range o.members {
		if x != m && x.membership != nil && slices.Contains(x.families(), f) {
			return true
		}
	}
	return false
}

// missingFamilies names, per family the member carries, its nodes without a pod CIDR
// of the family and its probe pods without an address of it: their pods cannot reach
// the other members in that family.
func missingFamilies(m *member, o observed) []string {
	var out []string
	for _, f := range m.families() {
		for _, n := range m.nodes {
			if m.nodeError(n.Name) != nil || len(n.Spec.PodCIDRs) == 0 {
				continue
			}
			if !slices.ContainsFunc(n.Spec.PodCIDRs, func(c string) bool { return familyOf(c) == f }) {
				out = append(out, labelled(m, f, fmt.Sprintf("node %s has no %s pod CIDR (spec.podCIDRs %s), while the member's podCIDRs hold %s", n.Name, f, strings.Join(n.Spec.PodCIDRs, ","), strings.Join(m.membership.Spec.PodCIDRs, ","))))
			}
		}
		for _, p := range o.probes[m.name] {
			if p.ipOf(f) == "" {
				addrs := p.ips
				if len(addrs) == 0 {
					addrs = []string{p.ip}
				}
				out = append(out, labelled(m, f, fmt.Sprintf("pod %s on %s has no %s address (status.podIPs %s)", p.name, p.node, f, strings.Join(addrs, ","))))
			}
		}
	}
	return out
}

// leftOut names, for a check's detail, the nodes of m that did not answer ("" when all
// did): the nodes line says why and what to do.
func leftOut(m *member) string {
	nodes := m.failedNodes()
	if len(nodes) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s left out (see the nodes line)", strings.Join(nodes, ", "))
}

// translation is a node where a probe's source was rewritten, and to what.
type translation struct{ node, addr string }

// translations are the nodes of m whose conntrack saw the probe from a's pod to the
// other member's pod leave with another source.
func translations(m *member, a across) []translation {
	var out []translation
	for _, n := range m.nodes {
		for _, f := range m.flows[n.Name] {
			if f.Src == a.fromPod.ip && f.Dst == a.toPod.ip && f.ReplyDst != f.Src {
				t := translation{n.Name, f.ReplyDst}
				if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// whose names what an address is: a node's, or none known.
func whose(o observed, addr string) string {
	if n := nodeOf(o, addr); n != "" {
		return "node " + n
	}
	if n := vtepOf(o, addr); n != "" {
		return "vx-strait of node " + n
	}
	return "not the pod's"
}

// vtepOf names the node (of any member) whose vx-strait address, IPv4 or IPv6, addr is:
// what a masquerade on a node gives a packet that leaves through vx-strait.
func vtepOf(o observed, addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	for _, m := range o.members {
		for _, n := range m.nodes {
			for _, a := range n.Status.Addresses {
				if under, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP &&
					(route.VTEP6(under) == ip || under.Unmap().Is4() && route.VTEP(under) == ip) {
					return m.name + "/" + n.Name
				}
			}
		}
	}
	return ""
}

// ipv6MinMTU is the least MTU IPv6 allows a link (RFC 8200): a path that carries less
// breaks IPv6, which routers never fragment.
const ipv6MinMTU = 1280

// mtu judges, for each other member and each family the two share, the path MTU
// measured from m's probe pod on a plain node: a full-sized datagram (the path MTU less
// the family's IP and UDP headers: 28 bytes for IPv4, 48 for IPv6) must cross, and an
// IPv6 path must carry IPv6's 1280 bytes.
func mtu(m *member, o observed) Result {
	var bad, warn, ok []string
	var fixes []string
	for _, a := range o.across {
		if a.from != m.name || (a.mtu == nil && a.mtuErr == nil) {
			continue
		}
		path := labelled(m, a.family, fmt.Sprintf("from %s to %s's pod %s", a.fromPod.node, a.to, a.toPod.ip))
		switch {
		case a.mtuErr != nil:
			warn = append(warn, path+": "+a.mtuErr.Error())
		case a.mtu.Error != "":
			warn = append(warn, path+": "+a.mtu.Error)
		case !a.mtu.Small:
			warn = append(warn, path+": no datagram crossed")
		case !a.mtu.FullAnswered:
			to, _ := netip.ParseAddr(a.toPod.ip)
			headers := probe.UDPOverhead(to)
			bad = append(bad, fmt.Sprintf("%s: datagrams of the path MTU %d (%d bytes of data, %d of %s and UDP headers) with don't fragment vanish while small ones cross",
				path, a.mtu.PathMTU, a.mtu.PathMTU-headers, headers, a.family))
			fixes = appendNew(fixes, "a black hole: the path between the gateways carries less than their links' MTU, from which the agent sizes the cable, and no ICMP says so; set the gateway nodes' link MTU to what the path carries, or let ICMP fragmentation-needed (IPv4) and packet-too-big (ICMPv6 type 2) through the firewalls on the way")
		case a.family == corev1.IPv6Protocol && a.mtu.PathMTU < ipv6MinMTU:
			bad = append(bad, fmt.Sprintf("%s: path MTU %d, less than the %d IPv6 needs", path, a.mtu.PathMTU, ipv6MinMTU))
			fixes = appendNew(fixes, fmt.Sprintf("IPv6 needs a path MTU of %d and routers do not fragment it: the cable's overhead (over an IPv6 underlay 20 bytes more than over IPv4) leaves less; raise the gateway nodes' link MTU (and the underlay's) so that the cable carries %d", ipv6MinMTU, ipv6MinMTU))
		default:
			ok = append(ok, fmt.Sprintf("%s: path MTU %d, full-sized datagrams with don't fragment cross", path, a.mtu.PathMTU))
		}
	}
	switch {
	case len(bad) > 0:
		return result(checkMTU, m, Fail, joinDetails(append(bad, warn...)), strings.Join(fixes, "; "))
	case len(warn) > 0:
		return result(checkMTU, m, Warn, joinDetails(append(warn, ok...)), "see the connections and firewall checks")
	case len(ok) == 0:
		return result(checkMTU, m, Warn, "no probe pod to measure from", "see the connections check")
	}
	return result(checkMTU, m, Pass, joinDetails(ok), "")
}

// activeGateway is a member's active Gateway, nil without one.
func activeGateway(m *member) *straitv1.Gateway {
	for i, g := range m.gateways {
		if g.Spec.HAState == straitv1.HAActive {
			return &m.gateways[i]
		}
	}
	return nil
}

func endpointOf(m *member) string {
	if g := activeGateway(m); g != nil {
		return fmt.Sprintf("%s %s:%d", g.Spec.NodeName, g.Spec.IP, g.Spec.Port)
	}
	return "its active gateway"
}

func memberNamed(o observed, name string) *member {
	for _, x := range o.members {
		if x.name == name {
			return x
		}
	}
	return nil
}

// notChecked is a Peer whose status nobody wrote yet: the active gateway's agent writes
// it after each round of health checks (every --health-interval, 5 s by default), so a
// Peer the hub has just written has none for a few seconds. That is no fault.
func notChecked(p straitv1.Peer) bool {
	return p.Status.State == "" && len(p.Status.Conditions) == 0
}

func notCheckedDetail(clusters []string) string {
	return "not health-checked yet: the Peers of " + strings.Join(clusters, ", ") + " have no status"
}

const notCheckedFix = "the active gateway's agent writes each Peer's status after a round of health checks (--health-interval, 5 s): run diagnose again in a few seconds; if the status stays empty, read that agent's log"

func conditionMessage(p straitv1.Peer) string {
	for _, c := range p.Status.Conditions {
		if c.Type == straitv1.ConditionConnected {
			return c.Message
		}
	}
	return "no Connected condition"
}

func connections(m *member, o observed) Result {
	var bad, unchecked []string
	var actives []string
	for _, g := range m.gateways {
		if g.Spec.HAState == straitv1.HAActive {
			actives = append(actives, g.Spec.NodeName)
		}
	}
	if len(actives) != 1 {
		bad = append(bad, fmt.Sprintf("%d active gateways (%s)", len(actives), strings.Join(actives, ", ")))
	}
	peers := map[string]straitv1.Peer{}
	for _, p := range m.peers {
		peers[p.Spec.ClusterID] = p
	}
	for _, x := range o.members {
		if x == m || x.membership == nil {
			continue
		}
		p, ok := peers[x.name]
		switch {
		case !ok:
			bad = append(bad, "no Peer for "+x.name+" (the hub has not written it: is "+m.name+" in the same ClusterSet?)")
		case notChecked(p):
			unchecked = append(unchecked, x.name)
		case p.Status.State != "Connected":
			bad = append(bad, fmt.Sprintf("%s: %s (%s)", x.name, orDash(p.Status.State), conditionMessage(p)))
		}
	}
	var crossedFrom []string // nodes, once whatever the families
	for _, a := range o.across {
		if a.from != m.name {
			continue
		}
		if a.dialErr != nil {
			bad = append(bad, labelled(m, a.family, fmt.Sprintf("pod → pod from %s to %s's pod %s on %s: %v", a.fromPod.node, a.to, a.toPod.ip, a.toPod.node, a.dialErr)))
			continue
		}
		crossedFrom = appendNew(crossedFrom, a.fromPod.node)
	}
	crossed := len(crossedFrom)
	if len(bad) > 0 {
		return result(checkConnections, m, Fail, strings.Join(bad, "; "),
			"strait show connections shows each tunnel's state; the firewall, deployment and cni checks say where it breaks; the active gateways' agent logs say why")
	}
	if len(unchecked) > 0 {
		return result(checkConnections, m, Warn, fmt.Sprintf("%s; pod → pod across from %d nodes", notCheckedDetail(unchecked), crossed), notCheckedFix)
	}
	return result(checkConnections, m, Pass, fmt.Sprintf("every Peer Connected (%d), active gateway %s, pod → pod across from %d nodes", len(m.peers), strings.Join(actives, ""), crossed), "")
}

func deployment(m *member) Result {
	var bad []string
	if m.agents == nil {
		bad = append(bad, "no DaemonSet "+agentDaemonSet)
	}
	ready := 0
	for _, n := range m.nodes {
		p := m.agentOn(n.Name)
		switch {
		case p == nil:
			bad = append(bad, "no agent running on node "+n.Name+" (its pods have no route to other clusters)")
		case !podReady(*p):
			bad = append(bad, fmt.Sprintf("the agent on %s (%s) is not ready", n.Name, p.Name))
		default:
			ready++
		}
	}
	dnsReady := 0
	for _, p := range m.dnsPods {
		if podReady(p) {
			dnsReady++
		}
	}
	if m.dns == nil {
		bad = append(bad, "no Deployment "+dnsDeployment)
	} else if dnsReady == 0 {
		bad = append(bad, "no strait dns pod ready (clusterset.local is not answered)")
	}
	var images []string
	for _, p := range append(append([]corev1.Pod{}, m.agentPods...), m.dnsPods...) {
		for _, c := range p.Spec.Containers {
			if c.Name == agentContainer || c.Name == "dns" {
				images = appendNew(images, c.Image)
			}
		}
	}
	var builds []string
	for _, d := range m.membership.Status.Daemons {
		builds = appendNew(builds, d.Build.Version+"@"+shortRev(d.Build.Revision))
	}
	if len(builds) > 1 {
		bad = append(bad, "the daemons run different builds: "+strings.Join(builds, ", "))
	}
	if len(bad) > 0 {
		return result(checkDeployment, m, Fail, strings.Join(bad, "; "),
			"kubectl -n strait-system describe daemonset strait-agent / deployment strait-dns, and the pods' events and logs; strait version compares the builds")
	}
	return result(checkDeployment, m, Pass, fmt.Sprintf("agents ready on %d of %d nodes, strait dns %d ready, build %s", ready, len(m.nodes), dnsReady, strings.Join(builds, "")), "")
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func cidrCheck(m *member, o observed) Result {
	want, ok := o.expected[m.name]
	if !ok {
		return result(checkCIDRs, m, Fail, fmt.Sprintf("no cluster %s in %s", m.name, o.source), "add the cluster to the ClusterSet, or give the member's context the cluster's name")
	}
	pods, err := parsePrefixes(want.pods)
	if err != nil {
		return result(checkCIDRs, m, Warn, "the ClusterSet's podCIDRs: "+err.Error(), "")
	}
	svcs, err := parsePrefixes(want.services)
	if err != nil {
		return result(checkCIDRs, m, Warn, "the ClusterSet's serviceCIDRs: "+err.Error(), "")
	}
	// A family the ClusterSet lists no CIDR of for this cluster is one Strait does not
	// carry for it (a dual-stack cluster in an IPv4 ClusterSet): its ranges are not
	// wrong, only not Strait's; the detail names them.
	var bad, seenPods, seenSvcs, uncarried []string
	carried := func(c string) bool {
		p, err := netip.ParsePrefix(c)
		if err != nil || len(pods)+len(svcs) == 0 || hasFamily(pods, p.Addr().Is4()) || hasFamily(svcs, p.Addr().Is4()) {
			return true
		}
		uncarried = append(uncarried, c)
		return false
	}
	for _, n := range m.nodes {
		for _, c := range n.Spec.PodCIDRs {
			if !carried(c) {
				continue
			}
			seenPods = append(seenPods, c)
			if !within(c, pods) {
				bad = append(bad, fmt.Sprintf("node %s's pod CIDR %s is outside the podCIDRs %s", n.Name, c, strings.Join(want.pods, ",")))
			}
		}
	}
	for _, p := range o.probes[m.name] {
		if !within(hostPrefix(p.ip), pods) {
			bad = append(bad, fmt.Sprintf("pod %s's IP %s is outside the podCIDRs %s", p.name, p.ip, strings.Join(want.pods, ",")))
		}
	}
	switch {
	case m.serviceErr != nil:
		bad = append(bad, "the ServiceCIDR API: "+m.serviceErr.Error())
	default:
		for _, c := range m.serviceCIDRs {
			if !carried(c) {
				continue
			}
			seenSvcs = append(seenSvcs, c)
			if !within(c, svcs) {
				bad = append(bad, fmt.Sprintf("the service CIDR %s is outside the serviceCIDRs %s", c, strings.Join(want.services, ",")))
			}
		}
	}
	if len(bad) > 0 {
		fix := fmt.Sprintf("correct spec.clusters[name=%s] in the ClusterSet (git): podCIDRs must hold the cluster's pod CIDR (kube-controller-manager's --cluster-cidr, which holds every node's; here %s) and serviceCIDRs its service CIDR (%s)",
			m.name, summarise(seenPods), strings.Join(seenSvcs, ","))
		return result(checkCIDRs, m, Fail, fmt.Sprintf("against %s: %s", o.source, strings.Join(bad, "; ")), fix)
	}
	detail := fmt.Sprintf("nodes' pod CIDRs %s in %s, service CIDR %s in %s (%s)", summarise(seenPods), strings.Join(want.pods, ","),
		strings.Join(seenSvcs, ","), strings.Join(want.services, ","), o.source)
	if len(uncarried) > 0 {
		detail += fmt.Sprintf("; not carried by Strait (no CIDR of their family in %s): %s", o.source, strings.Join(uncarried, ","))
	}
	return result(checkCIDRs, m, Pass, detail, "")
}

// hasFamily says whether one of ps is IPv4 (v4) or IPv6 (!v4).
func hasFamily(ps []netip.Prefix, v4 bool) bool {
	for _, p := range ps {
		if p.Addr().Is4() == v4 {
			return true
		}
	}
	return false
}

func parsePrefixes(cs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// hostPrefix is the one-address prefix of ip in its family (/32, or /128 for IPv6: a
// "/32" of an IPv6 pod's address was a /32 network, inside no pod CIDR).
func hostPrefix(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return netip.PrefixFrom(a, a.BitLen()).String()
}

// within says whether CIDR c lies inside one of outer.
func within(c string, outer []netip.Prefix) bool {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return false
	}
	for _, o := range outer {
		if o.Bits() <= p.Bits() && o.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// summarise is the smallest prefix per family holding every CIDR, "-" for none.
func summarise(cs []string) string {
	if s := plan.Summarise(cs); len(s) > 0 {
		return strings.Join(s, ",")
	}
	return "-"
}

func appendNew(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
