package topology

import (
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CNIs a lab cluster can run. Real clusters differ from the lab's first shape (a
// bridge that never masquerades) in exactly the places that break multi-cluster
// traffic, so a lab file picks per cluster.
const (
	// CNIBridge is the CNI bridge plugin without ipMasq and host-gw routes between
	// nodes: nothing on the node masquerades pod traffic.
	CNIBridge = "bridge"
	// CNIKindnetMasq is CNIBridge plus the masquerade kindnet installs: pod traffic to
	// anything outside the cluster's pod CIDR leaves from the node's address, traffic
	// inside it does not.
	CNIKindnetMasq = "kindnet-masq"
	// CNIFlannel is flanneld (VXLAN backend, --kube-subnet-mgr, --ip-masq) as a
	// DaemonSet: pod routes between nodes come from flannel.
	CNIFlannel = "flannel"
)

// Where a CNI's masquerade lives: iptables' nat table (iptables-nft, as kindnet and
// flannel write it by default) or an nftables table of the CNI's own.
const (
	MasqueradeIPTables = "iptables"
	MasqueradeNFTables = "nftables"
)

// kube-proxy's modes.
const (
	KubeProxyNFTables = "nftables"
	KubeProxyIPTables = "iptables"
)

// How a cluster's router puts its gateway nodes on the WAN (ClusterShape.GatewayNAT).
const (
	// GatewayNATOneToOne: the gateways have LAN addresses only; the router holds a public
	// WAN address per gateway and maps it to that gateway both ways (a cloud's public IP),
	// and the lab sets the gateway Node's ExternalIP to it, as a cloud provider does.
	GatewayNATOneToOne = "oneToOne"
	// GatewayNATMasquerade: the gateways have LAN addresses only; the router masquerades
	// them to its own WAN address and forwards nothing in (a site's firewall).
	GatewayNATMasquerade = "masquerade"
)

// ClusterShape is how one lab cluster's own networking is built. The zero value is the
// lab's first shape: bridge, kube-proxy in nftables mode, gateways on the WAN.
type ClusterShape struct {
	// CNI is bridge (default), kindnet-masq or flannel.
	CNI string `json:"cni,omitempty"`
	// Masquerade is where the CNI's masquerade lives: iptables (default) or nftables.
	// Only for a CNI that masquerades.
	Masquerade string `json:"masquerade,omitempty"`
	// KubeProxyMode is nftables (default) or iptables.
	KubeProxyMode string `json:"kubeProxyMode,omitempty"`
	// GatewayNAT puts the gateway nodes behind the cluster's router: oneToOne or
	// masquerade; empty, they own their WAN addresses. The lab builds only the network:
	// how Strait reaches the gateways is the ClusterSet's (gateway.endpoint).
	GatewayNAT string `json:"gatewayNAT,omitempty"`
}

// RoutesPods says whether the CNI routes pods between nodes itself (flannel's VXLAN):
// then the lab adds no host-gw routes between the nodes.
func (s ClusterShape) RoutesPods() bool { return s.CNI == CNIFlannel }

// Masquerades says whether the cluster's CNI masquerades pod traffic.
func (s ClusterShape) Masquerades() bool { return s.CNI == CNIKindnetMasq || s.CNI == CNIFlannel }

// String is the shape as the lab's progress lines name it.
func (s ClusterShape) String() string {
	out := "cni " + s.CNI
	if s.Masquerades() {
		out += " (masquerade in " + s.Masquerade + ")"
	}
	out += ", kube-proxy " + s.KubeProxyMode
	switch s.GatewayNAT {
	case GatewayNATOneToOne:
		out += ", gateways behind 1:1 NAT"
	case GatewayNATMasquerade:
		out += ", gateways behind masquerade"
	}
	return out
}

// resolve fills the defaults and checks every field against what the lab can build.
func (s ClusterShape) resolve(fp *field.Path) (ClusterShape, field.ErrorList) {
	var errs field.ErrorList
	if s.CNI == "" {
		s.CNI = CNIBridge
	}
	if s.KubeProxyMode == "" {
		s.KubeProxyMode = KubeProxyNFTables
	}
	if cnis := []string{CNIBridge, CNIKindnetMasq, CNIFlannel}; !slices.Contains(cnis, s.CNI) {
		errs = append(errs, field.NotSupported(fp.Child("cni"), s.CNI, cnis))
	}
	if modes := []string{KubeProxyNFTables, KubeProxyIPTables}; !slices.Contains(modes, s.KubeProxyMode) {
		errs = append(errs, field.NotSupported(fp.Child("kubeProxyMode"), s.KubeProxyMode, modes))
	}
	if nats := []string{"", GatewayNATOneToOne, GatewayNATMasquerade}; !slices.Contains(nats, s.GatewayNAT) {
		errs = append(errs, field.NotSupported(fp.Child("gatewayNAT"), s.GatewayNAT, nats[1:]))
	}
	switch {
	case s.Masquerades() && s.Masquerade == "":
		s.Masquerade = MasqueradeIPTables
	case s.Masquerades():
		if backends := []string{MasqueradeIPTables, MasqueradeNFTables}; !slices.Contains(backends, s.Masquerade) {
			errs = append(errs, field.NotSupported(fp.Child("masquerade"), s.Masquerade, backends))
		}
	case s.Masquerade != "" && s.CNI == CNIBridge:
		errs = append(errs, field.Invalid(fp.Child("masquerade"), s.Masquerade,
			"the bridge CNI never masquerades: choose cni kindnet-masq or flannel, or leave masquerade out"))
	}
	return s, errs
}

// resolveShapes checks that every cluster the lab file shapes is in the ClusterSet.
func resolveShapes(shapes map[string]ClusterShape, clusters []string, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, 0, len(shapes))
	for name := range shapes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(clusters, name) {
			errs = append(errs, field.Invalid(fp.Key(name), name,
				"not a cluster of the ClusterSet (its clusters: "+strings.Join(clusters, ", ")+")"))
		}
	}
	return errs
}

// checkUnjoined checks that every unjoined cluster is one of the ClusterSet's, named
// once, and that at least one cluster stays in the ClusterSet.
func checkUnjoined(unjoined, clusters []string, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range unjoined {
		switch {
		case !slices.Contains(clusters, name):
			errs = append(errs, field.Invalid(fp.Index(i), name,
				"not a cluster of the ClusterSet (its clusters: "+strings.Join(clusters, ", ")+")"))
		case slices.Contains(unjoined[:i], name):
			errs = append(errs, field.Duplicate(fp.Index(i), name))
		}
	}
	if len(unjoined) > 0 && len(unjoined) >= len(clusters) {
		errs = append(errs, field.Invalid(fp, unjoined, "leaves the ClusterSet without a cluster: at least one must be joined"))
	}
	return errs
}
