package show

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// The views, as `strait show` names them.
const (
	viewConnections = "connections"
	viewGateways    = "gateways"
	viewEndpoints   = "endpoints"
	viewNetworks    = "networks"
	viewExports     = "exports"
	viewImports     = "imports"
	viewVersions    = "versions"
	viewAll         = "all"
)

var viewNames = []string{viewConnections, viewGateways, viewEndpoints, viewNetworks, viewExports, viewImports, viewVersions, viewAll}

// Connection is one member's tunnel to another, as its active gateway reports it in the
// Peer's status.
type Connection struct {
	Cluster string `json:"cluster"`
	Peer    string `json:"peer"`
	// Gateway is the local node that reports the connection.
	Gateway string `json:"gateway,omitempty"`
	// RemoteGateway and Endpoint are where the cable goes: the peer's active gateway
	// and its advertised endpoint (a hostname to resolve, or "behind-masquerade" for a
	// peer that dials this side).
	RemoteGateway string `json:"remoteGateway,omitempty"`
	Endpoint      string `json:"endpoint,omitempty"`
	// InUse is the endpoint the cable sends to now (behind a NAT: the NAT's address and
	// port); NATDetected says a NAT sits between the gateways; Initiator is the side that
	// opens the cable (Local, Remote, Both; None when both are behind masquerade).
	InUse         string               `json:"inUse,omitempty"`
	NATDetected   bool                 `json:"natDetected,omitempty"`
	Initiator     string               `json:"initiator,omitempty"`
	Driver        straitv1.CableDriver `json:"driver,omitempty"`
	State         string               `json:"state"`
	LatencyMicros int64                `json:"latencyMicros,omitempty"`
	LossPercent   int32                `json:"lossPercent"`
	LastHandshake *metav1.Time         `json:"lastHandshake,omitempty"`
	RxBytes       int64                `json:"rxBytes"`
	TxBytes       int64                `json:"txBytes"`
	// Message is the Connected condition's when the connection is not up.
	Message string `json:"message,omitempty"`
}

// GatewayNode is one gateway-capable node of a member, as its agent publishes it.
type GatewayNode struct {
	Cluster string           `json:"cluster"`
	Node    string           `json:"node"`
	HAState straitv1.HAState `json:"haState"`
	// Endpoint is the advertised address and port ("" when the ClusterSet gives none the
	// node can know: behind masquerade, a LoadBalancer, a DNS name); LocalIP the node's
	// own address the cable binds, when it differs (behind a NAT).
	Endpoint      string               `json:"endpoint"`
	LocalIP       string               `json:"localIP,omitempty"`
	Driver        straitv1.CableDriver `json:"driver"`
	Ready         string               `json:"ready"`
	LastHeartbeat *metav1.Time         `json:"lastHeartbeat,omitempty"`
}

// Endpoint is a member's active gateway, where the other members' cables go.
type Endpoint struct {
	Cluster       string               `json:"cluster"`
	Gateway       string               `json:"gateway"`
	Endpoint      string               `json:"endpoint"`
	Driver        straitv1.CableDriver `json:"driver"`
	HealthCheckIP string               `json:"healthCheckIP,omitempty"`
	// HealthCheckIPv6 is the gateway's IPv6 health-check address (dual-stack and
	// IPv6-only members).
	HealthCheckIPv6 string `json:"healthCheckIPv6,omitempty"`
	PublicKey       string `json:"publicKey,omitempty"`
}

// Network is a member's address ranges.
type Network struct {
	Cluster      string   `json:"cluster"`
	PodCIDRs     []string `json:"podCIDRs"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	GlobalCIDR   string   `json:"globalCIDR,omitempty"`
	EgressIPs    []string `json:"egressIPs,omitempty"`
}

// Export is one ServiceExport in a member with its conditions.
type Export struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Valid     string `json:"valid"`
	Ready     string `json:"ready"`
	Conflict  string `json:"conflict"`
	// Message joins the messages of the conditions that are not as they should be.
	Message string `json:"message,omitempty"`
}

// Import is one ServiceImport in a member: what its clusterset name answers there, in
// each family.
type Import struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
	// IPFamilies are the families the name is answered in here (A for IPv4, AAAA for
	// IPv6); IPs the clusterset IPs, one a family (none for a headless service).
	IPFamilies []string `json:"ipFamilies,omitempty"`
	IPs        []string `json:"ips,omitempty"`
	// Clusters are the exporting clusters.
	Clusters []string `json:"clusters,omitempty"`
}

// Version is one daemon's build; Cluster is "hub" for the hub.
type Version struct {
	Cluster  string       `json:"cluster"`
	Daemon   string       `json:"daemon"`
	Node     string       `json:"node,omitempty"`
	Pod      string       `json:"pod,omitempty"`
	Version  string       `json:"version"`
	Revision string       `json:"revision"`
	Since    *metav1.Time `json:"since,omitempty"`
}

// Unreadable is a member that could not be read, and why.
type Unreadable struct {
	Cluster string `json:"cluster"`
	Error   string `json:"error"`
}

func readable(st *State) []Member {
	var out []Member
	for _, m := range st.Members {
		if m.Err == nil {
			out = append(out, m)
		}
	}
	return out
}

func unreadable(st *State) []Unreadable {
	var out []Unreadable
	for _, m := range st.Members {
		if m.Err != nil {
			out = append(out, Unreadable{Cluster: m.Name, Error: m.Err.Error()})
		}
	}
	return out
}

func hostPort(ip string, port int32) string {
	if ip == "" {
		return ""
	}
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// behindMasquerade is the endpoint of a peer that cannot be dialed: it dials this side.
const behindMasquerade = "behind-masquerade"

// advertisedEndpoint is where a Peer says its gateway is reached: an address or a
// hostname with the port, or behindMasquerade.
func advertisedEndpoint(e *straitv1.PeerEndpoint) string {
	switch {
	case e.IP != "":
		return hostPort(e.IP, e.Port)
	case e.Hostname != "":
		return hostPort(e.Hostname, e.Port)
	case e.BehindMasquerade:
		return behindMasquerade
	}
	return ""
}

// connections are every member's Peers; a finding for each that is not Connected.
func connections(st *State) ([]Connection, []string) {
	var out []Connection
	var findings []string
	for _, m := range readable(st) {
		for _, p := range m.Peers {
			c := Connection{Cluster: m.Name, Peer: p.Spec.ClusterID, Gateway: p.Status.Gateway, State: p.Status.State,
				LatencyMicros: p.Status.LatencyMicros, LossPercent: p.Status.LossPercent, LastHandshake: p.Status.LastHandshake,
				RxBytes: p.Status.RxBytes, TxBytes: p.Status.TxBytes,
				InUse: p.Status.Endpoint, NATDetected: p.Status.NATDetected, Initiator: p.Status.Initiator}
			if e := p.Spec.Endpoint; e != nil {
				c.RemoteGateway, c.Endpoint, c.Driver = e.Gateway, advertisedEndpoint(e), e.Driver
			}
			if c.State == "" {
				c.State = "Unknown"
			}
			cond := apimeta.FindStatusCondition(p.Status.Conditions, straitv1.ConditionConnected)
			if c.State != "Connected" && cond != nil {
				c.Message = cond.Message
			}
			switch {
			case p.Spec.Endpoint == nil:
				findings = append(findings, fmt.Sprintf("%s → %s: no endpoint: %s has no active gateway the hub knows of", m.Name, c.Peer, c.Peer))
			case c.State != "Connected":
				findings = append(findings, fmt.Sprintf("%s → %s: %s%s", m.Name, c.Peer, c.State, prefixed(": ", c.Message)))
			}
			out = append(out, c)
		}
	}
	return out, findings
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// gateways are every member's Gateways; a finding for a member with no active one.
func gateways(st *State) ([]GatewayNode, []string) {
	var out []GatewayNode
	var findings []string
	for _, m := range readable(st) {
		active := 0
		for _, g := range m.Gateways {
			ready := "Unknown"
			if c := apimeta.FindStatusCondition(g.Status.Conditions, "Ready"); c != nil {
				ready = string(c.Status)
			}
			if g.Spec.HAState == straitv1.HAActive {
				active++
			}
			gn := GatewayNode{Cluster: m.Name, Node: g.Spec.NodeName, HAState: g.Spec.HAState,
				Endpoint: hostPort(g.Spec.IP, g.Spec.Port), Driver: g.Spec.Driver, Ready: ready, LastHeartbeat: g.Status.LastHeartbeat}
			if g.Spec.LocalIP != g.Spec.IP {
				gn.LocalIP = g.Spec.LocalIP
			}
			out = append(out, gn)
		}
		switch {
		case active == 0:
			findings = append(findings, fmt.Sprintf("%s: no active gateway (%d gateway-capable nodes)", m.Name, len(m.Gateways)))
		case active > 1:
			findings = append(findings, fmt.Sprintf("%s: %d gateways say active", m.Name, active))
		}
	}
	return out, findings
}

// endpoints are every member's active gateway as the other members' cables reach it.
func endpoints(st *State) ([]Endpoint, []string) {
	var out []Endpoint
	var findings []string
	for _, m := range readable(st) {
		found := false
		for _, g := range m.Gateways {
			if g.Spec.HAState != straitv1.HAActive {
				continue
			}
			found = true
			out = append(out, Endpoint{Cluster: m.Name, Gateway: g.Spec.NodeName, Endpoint: hostPort(g.Spec.IP, g.Spec.Port),
				Driver: g.Spec.Driver, HealthCheckIP: g.Spec.HealthCheckIP, HealthCheckIPv6: g.Spec.HealthCheckIPv6,
				PublicKey: g.Spec.PublicKey})
		}
		if !found {
			findings = append(findings, m.Name+": no active gateway, so no endpoint")
		}
	}
	return out, findings
}

// networks are every member's ranges as the hub gave them in its Membership.
func networks(st *State) ([]Network, []string) {
	var out []Network
	var findings []string
	for _, m := range readable(st) {
		if m.Membership == nil {
			findings = append(findings, m.Name+": no Membership: the hub has not written this member yet")
			continue
		}
		n := Network{Cluster: m.Name, PodCIDRs: m.Membership.Spec.PodCIDRs, ServiceCIDRs: m.Membership.Spec.ServiceCIDRs}
		if g := m.Membership.Spec.Globalnet; g != nil {
			n.GlobalCIDR, n.EgressIPs = g.GlobalCIDR, g.EgressIPs
		}
		out = append(out, n)
	}
	return out, findings
}

// exports are every member's ServiceExports with their MCS conditions; a finding for
// each that is not valid, not ready or in conflict.
func exports(st *State) ([]Export, []string) {
	var out []Export
	var findings []string
	for _, m := range readable(st) {
		for _, e := range m.Exports {
			x := Export{Cluster: m.Name, Namespace: e.Namespace, Name: e.Name}
			var msgs []string
			cond := func(typ string, good metav1.ConditionStatus) string {
				c := apimeta.FindStatusCondition(e.Status.Conditions, typ)
				if c == nil {
					return "Unknown"
				}
				if c.Status != good && c.Message != "" {
					msgs = append(msgs, typ+": "+c.Message)
				}
				return string(c.Status)
			}
			x.Valid = cond(string(mcsv1.ServiceExportConditionValid), metav1.ConditionTrue)
			x.Ready = cond(string(mcsv1.ServiceExportConditionReady), metav1.ConditionTrue)
			x.Conflict = cond(string(mcsv1.ServiceExportConditionConflict), metav1.ConditionFalse)
			if x.Conflict == "Unknown" {
				// No Conflict condition is no conflict.
				x.Conflict = string(metav1.ConditionFalse)
			}
			x.Message = strings.Join(msgs, "; ")
			if x.Valid != "True" || x.Ready != "True" || x.Conflict != "False" {
				findings = append(findings, fmt.Sprintf("%s: export %s/%s: valid %s, ready %s, conflict %s%s",
					m.Name, e.Namespace, e.Name, x.Valid, x.Ready, x.Conflict, prefixed(": ", x.Message)))
			}
			out = append(out, x)
		}
	}
	return out, findings
}

// imports are every member's ServiceImports with their families and clusterset IPs; a
// finding for a ClusterSetIP import that lists a family it has no clusterset IP of
// (its AAAA or A would go unanswered).
func imports(st *State) ([]Import, []string) {
	var out []Import
	var findings []string
	for _, m := range readable(st) {
		for _, si := range m.Imports {
			x := Import{Cluster: m.Name, Namespace: si.Namespace, Name: si.Name, Type: string(si.Spec.Type), IPs: si.Spec.IPs}
			for _, f := range si.Spec.IPFamilies {
				x.IPFamilies = append(x.IPFamilies, string(f))
			}
			for _, c := range si.Status.Clusters {
				x.Clusters = append(x.Clusters, c.Cluster)
			}
			if si.Spec.Type == mcsv1.ClusterSetIP && len(si.Spec.IPs) > 0 {
				for _, f := range si.Spec.IPFamilies {
					if !slices.ContainsFunc(si.Spec.IPs, func(ip string) bool { return ipFamily(ip) == f }) {
						findings = append(findings, fmt.Sprintf("%s: import %s/%s lists %s in ipFamilies but has no %s clusterset IP (ips %s)",
							m.Name, si.Namespace, si.Name, f, f, strings.Join(si.Spec.IPs, ",")))
					}
				}
			}
			out = append(out, x)
		}
	}
	return out, findings
}

// ipFamily is an address's family.
func ipFamily(ip string) corev1.IPFamily {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Unmap().Is4():
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// versions are the hub's build and every member daemon's; a finding for each that is
// not client's, the build of this strait.
func versions(st *State, client straitv1.Build) ([]Version, []string) {
	var out []Version
	if h := st.ClusterSet.Status.Hub; h != nil {
		out = append(out, versionOf("hub", *h))
	}
	for _, m := range readable(st) {
		if m.Membership == nil {
			continue
		}
		ds := append([]straitv1.DaemonStatus(nil), m.Membership.Status.Daemons...)
		sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
		for _, d := range ds {
			out = append(out, versionOf(m.Name, d))
		}
	}
	var findings []string
	if st.ClusterSet.Status.Hub == nil {
		findings = append(findings, "hub: no build in the ClusterSet's status.hub (a hub older than this strait, or none has run)")
	}
	for _, v := range out {
		if v.Version != client.Version || v.Revision != client.Revision {
			findings = append(findings, fmt.Sprintf("%s %s %s runs %s (revision %s), this strait is %s (revision %s)",
				v.Cluster, v.Daemon, firstNonEmpty(v.Node, v.Pod), v.Version, v.Revision, client.Version, client.Revision))
		}
	}
	return out, findings
}

func versionOf(cluster string, d straitv1.DaemonStatus) Version {
	since := d.Since
	return Version{Cluster: cluster, Daemon: d.Daemon, Node: d.Node, Pod: d.Pod, Version: d.Build.Version, Revision: d.Build.Revision, Since: &since}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// age is how long ago t was, as kubectl prints ages.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := now.Sub(t.Time)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// byteCount is a byte count for people: B, KiB, MiB, GiB.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f%s", v, suffix)
}

func latency(us int64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fms", float64(us)/1000)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortRevision is a commit as people read it (12 characters, "-dirty" kept).
func shortRevision(r string) string {
	base, dirty := strings.CutSuffix(r, "-dirty")
	if len(base) == 40 {
		base = base[:12]
	}
	if dirty {
		base += "-dirty"
	}
	return base
}
