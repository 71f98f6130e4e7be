package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// handshakeStale is how old a handshake may be: WireGuard renews it every two minutes
// while traffic flows, and the health checks are traffic.
const handshakeStale = 3 * time.Minute

// firewall judges the cable between the active gateways from the Peers' health checks
// and handshakes, and what the nodes' own nftables do to the cable's and vx-strait's
// UDP ports in each family those run in (nodeDrops).
func firewall(m *member, o observed) Result {
	gw := activeGateway(m)
	if gw == nil {
		return result(checkFirewall, m, Warn, "no active gateway: the cable could not be judged", "see the connections check")
	}
	port := m.membership.Spec.Cable.Port
	var bad, ok, unchecked []string
	for _, p := range m.peers {
		st := p.Status
		if notChecked(p) {
			unchecked = append(unchecked, p.Spec.ClusterID)
			continue
		}
		remote := p.Spec.ClusterID
		if r := memberNamed(o, remote); r != nil {
			remote += " (" + endpointOf(r) + ")"
		}
		between := fmt.Sprintf("%s ↔ %s", endpointOf(m), remote)
		var hs string
		if st.LastHandshake != nil {
			hs = fmt.Sprintf(", last handshake %s ago", o.now.Sub(st.LastHandshake.Time).Round(time.Second))
		}
		switch {
		case st.State != "Connected" || st.LossPercent >= 100:
			bad = append(bad, fmt.Sprintf("%s: %s, %d%% of health checks lost%s (%s)", between, orDash(st.State), st.LossPercent, hs, conditionMessage(p)))
		case st.LastHandshake != nil && o.now.Sub(st.LastHandshake.Time) > handshakeStale:
			bad = append(bad, fmt.Sprintf("%s: no handshake for %s", between, o.now.Sub(st.LastHandshake.Time).Round(time.Second)))
		default:
			ok = append(ok, fmt.Sprintf("%s: %d%% lost%s", p.Spec.ClusterID, st.LossPercent, hs))
		}
	}
	rules, ruleFixes, rulesRead := nodeDrops(m, gw)
	switch {
	case len(bad) > 0 || len(rules) > 0:
		var fixes []string
		if len(bad) > 0 {
			fixes = append(fixes, fmt.Sprintf("nothing comes back through the cable: open UDP port %d both ways between the active gateways' endpoints (firewalls, security groups, the nodes' own nftables), then read the agents' logs there", port))
		}
		return result(checkFirewall, m, Fail, joinDetails(append(bad, rules...)), strings.Join(append(fixes, ruleFixes...), "; "))
	case len(unchecked) > 0:
		return result(checkFirewall, m, Warn, notCheckedDetail(unchecked), notCheckedFix)
	case len(ok) == 0:
		return result(checkFirewall, m, Warn, "no Peer", "see the connections check")
	}
	return result(checkFirewall, m, Pass, fmt.Sprintf("UDP %d through %s: %s%s", port, gw.Spec.NodeName, strings.Join(ok, "; "), rulesRead), "")
}

// udpPorts are the UDP ports whose drops the firewall check looks for on a member's
// nodes: the cable's, between the gateways, and vx-strait's, between every node and the
// active gateway.
func udpPorts(m *member) []int {
	var out []int
	if m.membership != nil && m.membership.Spec.Cable.Port != 0 {
		out = append(out, int(m.membership.Spec.Cable.Port))
	}
	return append(out, route.Port)
}

// tableFamilies are the IP families an nftables table of family fam sees.
func tableFamilies(fam string) []corev1.IPFamily {
	switch fam {
	case "ip":
		return []corev1.IPFamily{corev1.IPv4Protocol}
	case "ip6":
		return []corev1.IPFamily{corev1.IPv6Protocol}
	case "inet":
		return []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}
	return nil
}

// underlays are the families of the addresses a member's tunnels run between: the
// cable's, the active gateways' endpoints (this member's and the other members' as its
// Peers name them), and vx-strait's, the nodes' internal addresses.
func underlays(m *member, gw *straitv1.Gateway) (cable, tunnel []corev1.IPFamily) {
	add := func(list []corev1.IPFamily, addr string) []corev1.IPFamily {
		if f := familyOf(addr); f != "" && !slices.Contains(list, f) {
			list = append(list, f)
		}
		return list
	}
	cable = add(add(cable, gw.Spec.IP), gw.Spec.LocalIP)
	for _, p := range m.peers {
		if e := p.Spec.Endpoint; e != nil {
			cable = add(cable, e.IP)
		}
	}
	for _, n := range m.nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				tunnel = add(tunnel, a.Address)
			}
		}
	}
	return cable, tunnel
}

// nodeDrops judges the nodes' nftables as `straitd probe node` read them: a rule of an
// ip, ip6 or inet table that drops the cable's port on a gateway node, or vx-strait's
// port on any node, in a family the traffic runs in; and the fence of the active
// gateway, which must let the cable's port through in each such family. It returns the
// findings, what to do, and for a pass what was read.
func nodeDrops(m *member, gw *straitv1.Gateway) (bad, fixes []string, read string) {
	cablePort := int(m.membership.Spec.Cable.Port)
	cable, tunnel := underlays(m, gw)
	readOn, unread, legacy := 0, []string{}, []string{}
	for _, n := range m.nodes {
		f, ok := m.facts[n.Name]
		switch {
		case !ok:
			continue // not read: the nodes line, or the kube-proxy check, says why
		case f.NFTError != "":
			unread = append(unread, n.Name+": "+f.NFTError)
			continue
		}
		readOn++
		if len(f.LegacyTables) > 0 {
			legacy = append(legacy, fmt.Sprintf("%s (%s)", n.Name, strings.Join(f.LegacyTables, ", ")))
		}
		gateway := m.gatewayCapable(n.Name)
		for _, d := range f.Drops {
			what, families := "", tunnel
			switch {
			case d.Port == cablePort && gateway:
				what, families = "the cable's", cable
			case d.Port == route.Port:
				what = "vx-strait's (the tunnel between the nodes and the active gateway)"
			default:
				continue
			}
			var hit []string
			for _, tf := range tableFamilies(d.Family) {
				if slices.Contains(families, tf) {
					hit = append(hit, string(tf))
				}
			}
			if len(hit) == 0 {
				continue // a family the traffic does not run in
			}
			bad = append(bad, fmt.Sprintf("%s: node %s drops UDP %d, %s port: table %s %s chain %s (rule handle %d, %s)",
				strings.Join(hit, " and "), n.Name, d.Port, what, d.Family, d.Table, d.Chain, d.Handle, d.Verdict))
			fixes = appendNew(fixes, fmt.Sprintf("remove the rules named or let UDP %d (the cable, between the gateways' endpoints) and %d (vx-strait, between the nodes) through them: nft -a list table FAMILY TABLE shows a rule by its handle; iptables-nft and ip6tables-nft rules are in tables ip filter and ip6 filter", cablePort, route.Port))
		}
		if n.Name != gw.Spec.NodeName {
			continue
		}
		for _, fence := range f.Fences {
			for _, tf := range tableFamilies(fence.Family) {
				if slices.Contains(cable, tf) && !slices.Contains(fence.Ports, cablePort) {
					bad = append(bad, fmt.Sprintf("%s: the fence on the active gateway %s drops UDP %d: set term of table %s %s holds %s, not the cable's port",
						tf, n.Name, cablePort, fence.Family, kernel.FenceTable, portList(fence.Ports)))
					fixes = appendNew(fixes, "the active gateway's agent writes its term into the fence at every Lease renewal, and the kernel drops the cable's port once it runs out: an agent that is frozen or cannot renew stops its cable on purpose (docs/agent.md, the fence); check the agent there (strait diagnose deployment, its log) and that one gateway holds the Lease (strait show gateways)")
				}
			}
		}
	}
	read = fmt.Sprintf("; no rule drops UDP %d or %d on %d nodes (ip, ip6, inet tables)", cablePort, route.Port, readOn)
	if f, ok := m.facts[gw.Spec.NodeName]; ok && len(f.Fences) > 0 {
		var fams []string
		for _, fence := range f.Fences {
			fams = append(fams, fence.Family)
		}
		read += fmt.Sprintf(", the fence (%s) lets %d through on %s", strings.Join(fams, ", "), cablePort, gw.Spec.NodeName)
	}
	if len(legacy) > 0 {
		read += "; legacy iptables tables, whose rules are not read, on " + strings.Join(legacy, ", ")
	}
	if len(unread) > 0 {
		read += "; not read: " + strings.Join(unread, "; ")
	}
	if readOn == 0 {
		read = ""
	}
	return bad, fixes, read
}

func portList(ports []int) string {
	if len(ports) == 0 {
		return "nothing"
	}
	var s []string
	for _, p := range ports {
		s = append(s, fmt.Sprint(p))
	}
	return strings.Join(s, ",")
}
