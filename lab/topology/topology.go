package topology

import (
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Prefix starts the name of every namespace and link the lab creates.
const Prefix = "sl-"

// Fixed names and ranges.
const (
	WANNamespace = Prefix + "wan"
	// BridgeName is the bridge inside a LAN or the WAN namespace.
	BridgeName = Prefix + "br"
	// NodeLANLink and NodeWANLink are a node's interfaces (in the node's namespace).
	NodeLANLink = Prefix + "lan"
	NodeWANLink = Prefix + "wan"
	// APIPort is the kube-apiserver's secure port inside a control-plane namespace.
	APIPort = 6443
	// GatewayLabel marks gateway-capable nodes (the ClusterSet's default selector).
	GatewayLabel = "strait.io/gateway"
	// HubName is the name of the hub's control plane.
	HubName = "hub"
	// GitPort is the lab's git server's port on the hub's LAN address, where Flux's
	// source-controller clones the clusterset repository.
	GitPort = 8080
)

// HubDNSServiceIP is the hub's cluster DNS (kube-dns) ClusterIP, the tenth address as
// in every member: Flux's controllers in the hub find each other by Service name.
func (l *Lab) HubDNSServiceIP() netip.Addr { return nthAddr(l.HubServiceCIDR.Addr(), 10) }

// Spec is what a lab file says beyond the ClusterSet.
type Spec struct {
	// ClusterSet is the path of the ClusterSet manifest.
	ClusterSet string `json:"clusterSet"`
	// Hub runs a hub control plane with the ClusterSet applied.
	Hub bool `json:"hub"`
	// Gateways is the number of gateway-capable nodes per cluster.
	Gateways int `json:"gateways"`
	// Workers is the number of plain nodes per cluster.
	Workers int `json:"workers"`
	// SampleWorkloads deploys whereami (ClusterIP and headless) and an idle client.
	SampleWorkloads bool `json:"sampleWorkloads"`
	// Clusters shapes each cluster's own networking (CNI, where it masquerades,
	// kube-proxy's mode), by cluster name; a cluster not listed has the default shape.
	Clusters map[string]ClusterShape `json:"clusters,omitempty"`
	// Networks pins the lab's own ranges; "lab up" chooses what is not pinned.
	Networks Networks `json:"networks,omitzero"`
	// Unjoined are clusters of the ClusterSet file the lab brings up (nodes, cluster
	// DNS, the sample workloads) without Strait and leaves out of the ClusterSet it
	// commits to git, with no kubeconfig Secret in the hub: clusters for `strait join
	// --install` to register as a person does one that never ran Strait. The lab writes
	// the overlay it would install them from (InstallDir) without applying it. Their
	// entries give the lab their CIDRs.
	Unjoined []string `json:"unjoined,omitempty"`
	// Monitoring runs a Prometheus in every cluster as a platform team runs it (each
	// member's scrapes that member's agents and strait dns, the hub's scrapes strait hub
	// and federates the members'), installs the monitoring.coreos.com CRDs and Strait's
	// monitoring components, and evaluates Strait's alerts with their durations
	// shortened (docs/lab.md). Off by default: it needs make prometheus-binaries.
	Monitoring bool `json:"monitoring,omitempty"`
	// GitOps is what syncs the lab's clusterset repo to the hub: GitOpsFlux (the
	// default, also when empty) or GitOpsArgoCD (it needs make argocd-images).
	GitOps string `json:"gitops,omitempty"`
	// IPFamilies are the IP families of the member clusters: [IPv4] (the default, also
	// when empty), [IPv4, IPv6], dual-stack clusters (two service ranges, nodes and pods
	// with an address of each family, kube-proxy in both) on a dual-stack LAN and WAN, or
	// [IPv6], IPv6-only clusters (ipv6only.go) on the same LAN and WAN, their ranges the
	// ClusterSet's IPv6 CIDRs. A dual-stack cluster's IPv6 ranges are the ClusterSet's
	// IPv6 CIDRs when it lists them, else the lab's own (Networks.IPv6). The hub stays
	// IPv4.
	IPFamilies []string `json:"ipFamilies,omitempty"`
	// GatewayLease, when set, is the gateway Lease timing of every agent (lease.go);
	// unset, the agents' defaults (1 s, renewed every 250 ms within 700 ms).
	GatewayLease *GatewayLease `json:"gatewayLease,omitempty"`
}

// The GitOps controllers a lab's hub can sync its repo with (Spec.GitOps).
const (
	GitOpsFlux   = "flux"
	GitOpsArgoCD = "argocd"
)

// SyncsWith is the GitOps controller of the lab: Spec.GitOps, GitOpsFlux when empty.
func (s Spec) SyncsWith() string {
	if s.GitOps == "" {
		return GitOpsFlux
	}
	return s.GitOps
}

// IsUnjoined says whether the lab leaves cluster out of the ClusterSet (Unjoined).
func (s Spec) IsUnjoined(cluster string) bool { return slices.Contains(s.Unjoined, cluster) }

// DefaultSpec is the lab for an example ClusterSet: a hub, two gateway nodes and one
// plain node per cluster, and the sample workloads.
func DefaultSpec(clusterSet string) Spec {
	return Spec{ClusterSet: clusterSet, Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true}
}

// Lab is the whole computed network.
type Lab struct {
	// Hub is the hub's control plane; nil without a hub.
	Hub *ControlPlane
	// HubNode is the hub's one node when the lab runs real nodes (valid with a hub): it
	// shares the hub's namespace and address, its pods take HubPodCIDR.
	HubNode  *Node
	Clusters []Cluster
	// Networks are the lab's own ranges, as chosen; LANRange, WANSubnet and InternetRange
	// the same, parsed.
	Networks Networks
	LANRange netip.Prefix
	// WANSubnet is the shared network of routers and gateway nodes, in WANNamespace.
	WANSubnet     netip.Prefix
	InternetRange netip.Prefix
	// HubPodCIDR and HubServiceCIDR are the hub's, inside LANRange (the hub's namespace
	// alone uses them; its ClusterIPs are kubernetes.default, which strait hub's pods
	// reach through the hub node's kube-proxy, the webhook's Service and kube-dns).
	HubPodCIDR     netip.Prefix
	HubServiceCIDR netip.Prefix
	// IPv6Range is the lab's IPv6 range (Networks.IPv6, parsed) in a dual-stack lab,
	// invalid otherwise; WANSubnet6 is the WAN's IPv6 network inside it.
	IPv6Range  netip.Prefix
	WANSubnet6 netip.Prefix
	// Internet stands for the internet (nil without members); HostLink is the host's way
	// into the lab (nil without members).
	Internet *Internet
	HostLink *HostLink
	// Links are the veths of the lab beyond its clusters' (the internet's WAN leg).
	Links []Link
}

// ControlPlane is where etcd, kube-apiserver, kube-controller-manager and kube-scheduler
// of one cluster run.
type ControlPlane struct {
	Cluster   string
	Namespace string
	// LANAddr is the API server's address on the cluster LAN (for the hub, whose
	// namespace has only loopback, a /32 on lo).
	LANAddr netip.Prefix
	// LANAddr6 is its IPv6 address on the LAN in a dual-stack lab (not the hub's).
	LANAddr6 netip.Prefix
	// Routes are the pod CIDR routes via nodes, so the control plane (and the cluster DNS
	// running there) can answer pods; the service CIDR via the first node; the hub's pod
	// CIDR via the hub. The hub's: a default route through the first member's router.
	Routes []Route
}

// Cluster is one member cluster.
type Cluster struct {
	Name  string
	Index int
	// Shape is the cluster's own networking, defaults filled.
	Shape ClusterShape
	// PodCIDR and ServiceCIDR are the cluster's first pod and service CIDRs.
	PodCIDR     netip.Prefix
	ServiceCIDR netip.Prefix
	// PodCIDR6 and ServiceCIDR6 are the cluster's IPv6 ranges in a dual-stack lab (the
	// lab's, from Networks.IPv6); invalid otherwise.
	PodCIDR6     netip.Prefix
	ServiceCIDR6 netip.Prefix
	// APIServiceIP is the kubernetes.default ClusterIP; DNSServiceIP the cluster DNS.
	APIServiceIP netip.Addr
	DNSServiceIP netip.Addr
	// LANNamespace holds the LAN bridge every node and the control plane hang off.
	LANNamespace string
	LANSubnet    netip.Prefix
	LANSubnet6   netip.Prefix
	ControlPlane ControlPlane
	// HubAddr is the hub's address on this cluster's LAN (valid when the lab has a hub).
	HubAddr netip.Prefix
	Nodes   []Node
	// Router is the cluster's way out, the default gateway of its nodes and control plane.
	Router Router
	// Links are the veths of this cluster, created in order.
	Links []Link
}

// Node is one node: a namespace on the LAN, gateways also on the WAN (their cables run
// there; everything else leaves through the cluster's router), unless the cluster's
// gateways are behind its router's NAT.
type Node struct {
	Name      string
	Namespace string
	Gateway   bool
	LANAddr   netip.Prefix
	// WANAddr is valid only on gateway nodes not behind a NAT.
	WANAddr netip.Prefix
	// ExternalIP is a gateway's public address behind a 1:1 NAT, held by the router (the
	// Node's ExternalIP, as a cloud provider sets it).
	ExternalIP netip.Addr
	// PodCIDR is the node's share of the cluster's pod CIDR; PodGateway (its first
	// address) is the node's CNI bridge, every pod's gateway.
	PodCIDR    netip.Prefix
	PodGateway netip.Addr
	// LANAddr6, WANAddr6 and PodCIDR6 are the node's IPv6 counterparts in a dual-stack
	// lab (invalid otherwise).
	LANAddr6 netip.Prefix
	WANAddr6 netip.Prefix
	PodCIDR6 netip.Prefix
	// Routes are host-gw routes to the other nodes' pod CIDRs (not in a cluster whose CNI
	// routes pods itself, flannel), the service CIDR towards the control plane (so the
	// node's own ClusterIP connections take the LAN), and the default route via the
	// cluster's router.
	Routes []Route
}

// Route is a route in a namespace.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

// Link is a veth pair: Name in Namespace (addressed with Addr, and Addr6 in a dual-stack
// lab, or enslaved to the bridge when Addr is invalid) and Peer in PeerNamespace (on the
// bridge when PeerBridge).
type Link struct {
	Namespace     string
	Name          string
	Addr          netip.Prefix
	Addr6         netip.Prefix
	PeerNamespace string
	Peer          string
	PeerBridge    bool
}

// ClusterPrefix starts the name of every namespace of one cluster.
func ClusterPrefix(cluster string) string { return Prefix + cluster + "-" }

// Compute builds the lab for a ClusterSet. Every error names the field at fault. The
// networks spec.Networks leaves open are the first candidates clear of the ClusterSet
// (ChooseNetworks without the host's ranges: "lab up" pins them first).
func Compute(cs *straitv1.ClusterSet, spec Spec) (*Lab, field.ErrorList) {
	var errs field.ErrorList
	sp := field.NewPath("lab")
	if spec.Gateways < 0 || spec.Workers < 0 || spec.Gateways+spec.Workers == 0 {
		errs = append(errs, field.Invalid(sp.Child("gateways"), spec.Gateways, "a cluster needs at least one node (gateways + workers > 0)"))
	}
	if spec.Gateways+spec.Workers > 200 {
		errs = append(errs, field.TooMany(sp.Child("workers"), spec.Gateways+spec.Workers, 200))
	}
	// The WAN's .10 to .249 go to each member's router and its gateways.
	if len(cs.Spec.Clusters)*(spec.Gateways+1) > 240 {
		errs = append(errs, field.TooMany(sp.Child("gateways"), len(cs.Spec.Clusters)*(spec.Gateways+1), 240))
	}
	if len(cs.Spec.Clusters) > 250 {
		errs = append(errs, field.TooMany(field.NewPath("spec", "clusters"), len(cs.Spec.Clusters), 250))
	}
	errs = append(errs, checkRanges(cs)...)
	var names []string
	for _, c := range cs.Spec.Clusters {
		names = append(names, c.Name)
	}
	errs = append(errs, resolveShapes(spec.Clusters, names, sp.Child("clusters"))...)
	errs = append(errs, checkUnjoined(spec.Unjoined, names, sp.Child("unjoined"))...)
	errs = append(errs, checkFamilies(spec, sp)...)
	if spec.GatewayLease != nil {
		errs = append(errs, spec.GatewayLease.check(sp.Child("gatewayLease"))...)
	}
	if !spec.HasIPv6() {
		errs = append(errs, refuseIPv6CIDRs(cs)...)
	}
	if spec.IPv6Only() {
		errs = append(errs, checkIPv6Only(cs)...)
	}
	if spec.HasIPv6() && len(cs.Spec.Clusters) > maxDualStackClusters {
		errs = append(errs, field.TooMany(field.NewPath("spec", "clusters"), len(cs.Spec.Clusters), maxDualStackClusters))
	}
	if g := spec.SyncsWith(); g != GitOpsFlux && g != GitOpsArgoCD {
		errs = append(errs, field.NotSupported(sp.Child("gitops"), spec.GitOps, []string{GitOpsFlux, GitOpsArgoCD}))
	}
	nets, nerrs := ChooseNetworks(cs, spec.Networks, nil, spec.HasIPv6())
	errs = append(errs, nerrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	l := newLab(nets)
	if spec.Hub {
		// The hub has no LAN; its address lives on loopback so the API server has a
		// non-loopback address to advertise.
		l.Hub = &ControlPlane{Cluster: HubName, Namespace: ClusterPrefix(HubName) + "cp",
			LANAddr: netip.PrefixFrom(nthAddr(l.LANRange.Addr(), 2), 32)}
		l.HubNode = &Node{Name: HubName + "-node", Namespace: l.Hub.Namespace, LANAddr: l.Hub.LANAddr,
			PodCIDR: l.HubPodCIDR, PodGateway: nthAddr(l.HubPodCIDR.Addr(), 1)}
	}
	wanNext := 10
	for i, c := range cs.Spec.Clusters {
		cp := field.NewPath("spec", "clusters").Index(i)
		if c.Name == HubName && spec.Hub {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, "is the lab hub's name"))
			continue
		}
		cl, cerrs := l.computeCluster(c, i, spec, &wanNext, cp)
		errs = append(errs, cerrs...)
		if cl != nil {
			l.Clusters = append(l.Clusters, *cl)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if l.Hub != nil {
		// The hub sits on every member's LAN (a management network), so strait hub in the
		// hub's namespace reaches each member's API server at its LAN address.
		for i := range l.Clusters {
			c := &l.Clusters[i]
			addr := netip.PrefixFrom(nthAddr(c.LANSubnet.Addr(), 3), 24)
			c.HubAddr = addr
			// strait hub runs in a pod on the hub's node: the member's API server answers
			// the hub's pod addresses through the hub's address on its LAN.
			c.ControlPlane.Routes = append(c.ControlPlane.Routes, Route{Dst: l.HubPodCIDR, Via: addr.Addr()})
			c.Links = append(c.Links, Link{
				Namespace: l.Hub.Namespace, Name: fmt.Sprintf("%sm%d", Prefix, c.Index), Addr: addr,
				PeerNamespace: c.LANNamespace, Peer: Prefix + "hub", PeerBridge: true,
			})
		}
	}
	var routed []netip.Prefix
	for _, r := range clusterSetRanges(cs) {
		routed = append(routed, r.prefix)
	}
	l.wireWayOut(routed)
	return l, nil
}

func newLab(nets Networks) *Lab {
	l := &Lab{Networks: nets,
		LANRange:      netip.MustParsePrefix(nets.LAN),
		WANSubnet:     netip.MustParsePrefix(nets.WAN),
		InternetRange: netip.MustParsePrefix(nets.Internet)}
	// Past every member LAN (.1.0/24 to .250.0/24).
	l.HubServiceCIDR = netip.PrefixFrom(nthAddr(l.LANRange.Addr(), 253<<8), 24)
	l.HubPodCIDR = netip.PrefixFrom(nthAddr(l.LANRange.Addr(), 254<<8), 24)
	if nets.IPv6 != "" {
		l.IPv6Range = netip.MustParsePrefix(nets.IPv6)
		l.WANSubnet6 = wan6(l.IPv6Range)
	}
	return l
}

func (l *Lab) computeCluster(c straitv1.ClusterSpec, index int, spec Spec, wanNext *int, fp *field.Path) (*Cluster, field.ErrorList) {
	var errs field.ErrorList
	// An IPv6-only cluster has no IPv4 pod or service CIDR (checkIPv6Only): both stay
	// invalid, and so does every IPv4 route to them.
	var pod, svc netip.Prefix
	if !spec.IPv6Only() {
		var err error
		pod, err = firstCIDR(c.PodCIDRs)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("podCIDRs"), c.PodCIDRs, err.Error()))
		} else if pod.Bits() > 24-bitsFor(spec.Gateways+spec.Workers) {
			errs = append(errs, field.Invalid(fp.Child("podCIDRs"), c.PodCIDRs,
				fmt.Sprintf("too small for %d nodes with a /24 each", spec.Gateways+spec.Workers)))
		}
		svc, err = firstCIDR(c.ServiceCIDRs)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("serviceCIDRs"), c.ServiceCIDRs, err.Error()))
		} else if svc.Bits() > 28 {
			errs = append(errs, field.Invalid(fp.Child("serviceCIDRs"), c.ServiceCIDRs, "the lab needs at least a /28"))
		}
	}
	shape, serrs := spec.Clusters[c.Name].resolve(field.NewPath("lab", "clusters").Key(c.Name))
	errs = append(errs, serrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	lan := netip.PrefixFrom(nthAddr(l.LANRange.Addr(), (index+1)<<8), 24)
	cl := &Cluster{
		Name: c.Name, Index: index, Shape: shape,
		PodCIDR: pod, ServiceCIDR: svc,
		LANNamespace: ClusterPrefix(c.Name) + "lan",
		LANSubnet:    lan,
		ControlPlane: ControlPlane{
			Cluster: c.Name, Namespace: ClusterPrefix(c.Name) + "cp",
			LANAddr: netip.PrefixFrom(nthAddr(lan.Addr(), 2), 24),
		},
	}
	cl.Router = Router{Namespace: ClusterPrefix(c.Name) + "router",
		LANAddr: netip.PrefixFrom(nthAddr(lan.Addr(), 1), 24),
		WANAddr: netip.PrefixFrom(nthAddr(l.WANSubnet.Addr(), *wanNext), l.WANSubnet.Bits())}
	*wanNext++
	// In a dual-stack lab every address has an IPv6 twin at the same offset of the
	// IPv6 network (ipv6.go); the v6 helpers return invalid prefixes otherwise.
	if l.IPv6Range.IsValid() {
		cl.LANSubnet6 = lan6(l.IPv6Range, index)
		var ferrs field.ErrorList
		cl.PodCIDR6, cl.ServiceCIDR6, ferrs = l.ipv6CIDRs(c, index, spec.Gateways+spec.Workers, fp)
		if len(ferrs) > 0 {
			return nil, ferrs
		}
		cl.ControlPlane.LANAddr6 = l.lanTwin(cl, cl.ControlPlane.LANAddr)
		cl.Router.LANAddr6 = l.lanTwin(cl, cl.Router.LANAddr)
		cl.Router.WANAddr6 = l.wanTwin(cl.Router.WANAddr)
	}
	// kubernetes.default and kube-dns: the first and tenth address of the primary
	// family's service CIDR.
	if svc.IsValid() {
		cl.APIServiceIP, cl.DNSServiceIP = nthAddr(svc.Addr(), 1), nthAddr(svc.Addr(), 10)
	} else {
		cl.APIServiceIP, cl.DNSServiceIP = nthAddr6(cl.ServiceCIDR6.Addr(), 1), nthAddr6(cl.ServiceCIDR6.Addr(), 10)
	}
	cl.Links = append(cl.Links, Link{
		Namespace: cl.Router.Namespace, Name: NodeLANLink, Addr: cl.Router.LANAddr, Addr6: cl.Router.LANAddr6,
		PeerNamespace: cl.LANNamespace, Peer: Prefix + "router", PeerBridge: true,
	}, Link{
		Namespace: cl.Router.Namespace, Name: NodeWANLink, Addr: cl.Router.WANAddr, Addr6: cl.Router.WANAddr6,
		PeerNamespace: WANNamespace, Peer: fmt.Sprintf("%sr%d", Prefix, index), PeerBridge: true,
	}, Link{
		Namespace: cl.ControlPlane.Namespace, Name: NodeLANLink, Addr: cl.ControlPlane.LANAddr, Addr6: cl.ControlPlane.LANAddr6,
		PeerNamespace: cl.LANNamespace, Peer: Prefix + "cp", PeerBridge: true,
	})
	n := spec.Gateways + spec.Workers
	for i := range n {
		gw := i < spec.Gateways
		name := fmt.Sprintf("%s-gw-%d", c.Name, i+1)
		if !gw {
			name = fmt.Sprintf("%s-node-%d", c.Name, i-spec.Gateways+1)
		}
		node := Node{
			Name: name, Namespace: Prefix + name, Gateway: gw,
			LANAddr: netip.PrefixFrom(nthAddr(lan.Addr(), 11+i), 24),
		}
		if pod.IsValid() {
			node.PodCIDR = netip.PrefixFrom(nthAddr(pod.Addr(), (i+1)<<8), 24)
			node.PodGateway = nthAddr(node.PodCIDR.Addr(), 1)
		}
		if l.IPv6Range.IsValid() {
			node.LANAddr6 = l.lanTwin(cl, node.LANAddr)
			node.PodCIDR6 = nthSubnet64(cl.PodCIDR6, i+1)
		}
		cl.Links = append(cl.Links, Link{
			Namespace: node.Namespace, Name: NodeLANLink, Addr: node.LANAddr, Addr6: node.LANAddr6,
			PeerNamespace: cl.LANNamespace, Peer: fmt.Sprintf("%sn%d", Prefix, i+1), PeerBridge: true,
		})
		switch {
		case gw && shape.GatewayNAT == "":
			node.WANAddr = netip.PrefixFrom(nthAddr(l.WANSubnet.Addr(), *wanNext), l.WANSubnet.Bits())
			node.WANAddr6 = l.wanTwin(node.WANAddr)
			*wanNext++
			cl.Links = append(cl.Links, Link{
				Namespace: node.Namespace, Name: NodeWANLink, Addr: node.WANAddr, Addr6: node.WANAddr6,
				PeerNamespace: WANNamespace, Peer: fmt.Sprintf("%sw%d-%d", Prefix, index, i+1), PeerBridge: true,
			})
		case gw:
			// Behind the router: the gateway's only way out is its default route.
			m := GatewayMapping{Node: name, Private: node.LANAddr.Addr()}
			if shape.GatewayNAT == GatewayNATOneToOne {
				m.Public = netip.PrefixFrom(nthAddr(l.WANSubnet.Addr(), *wanNext), l.WANSubnet.Bits())
				node.ExternalIP = m.Public.Addr()
				*wanNext++
			}
			cl.Router.GatewayNAT = shape.GatewayNAT
			cl.Router.Gateways = append(cl.Router.Gateways, m)
		}
		cl.Nodes = append(cl.Nodes, node)
	}
	for i := range cl.Nodes {
		for j, other := range cl.Nodes {
			if i != j && !shape.RoutesPods() {
				cl.Nodes[i].Routes = appendRoute(cl.Nodes[i].Routes, other.PodCIDR, other.LANAddr)
				cl.Nodes[i].Routes = appendRoute6(cl.Nodes[i].Routes, other.PodCIDR6, other.LANAddr6)
			}
		}
		// A node's own connections to ClusterIPs need a route before kube-proxy's
		// output chain can rewrite them (a real node has a default route for this).
		cl.Nodes[i].Routes = appendRoute(cl.Nodes[i].Routes, svc, cl.ControlPlane.LANAddr)
		cl.Nodes[i].Routes = appendRoute6(cl.Nodes[i].Routes, cl.ServiceCIDR6, cl.ControlPlane.LANAddr6)
	}
	for _, node := range cl.Nodes {
		cl.ControlPlane.Routes = appendRoute(cl.ControlPlane.Routes, node.PodCIDR, node.LANAddr)
		cl.ControlPlane.Routes = appendRoute6(cl.ControlPlane.Routes, node.PodCIDR6, node.LANAddr6)
	}
	// CoreDNS runs in the control plane's namespace, where no kube-proxy runs: it reaches
	// ClusterIPs (strait dns's Service) through the first node's kube-proxy, which
	// masquerades sources outside the cluster CIDR, so the answers come back the same way.
	if len(cl.Nodes) > 0 {
		cl.ControlPlane.Routes = appendRoute(cl.ControlPlane.Routes, svc, cl.Nodes[0].LANAddr)
		cl.ControlPlane.Routes = appendRoute6(cl.ControlPlane.Routes, cl.ServiceCIDR6, cl.Nodes[0].LANAddr6)
	}
	return cl, nil
}

// Namespaces lists every namespace of the lab, the order they are created in.
func (l *Lab) Namespaces() []string {
	var out []string
	if l.Hub != nil {
		out = append(out, l.Hub.Namespace)
	}
	if l.Internet != nil {
		out = append(out, WANNamespace, l.Internet.Namespace)
	}
	for _, c := range l.Clusters {
		out = append(out, c.LANNamespace, c.Router.Namespace, c.ControlPlane.Namespace)
		for _, n := range c.Nodes {
			out = append(out, n.Namespace)
		}
	}
	return out
}

// Cluster finds a member by name.
func (l *Lab) Cluster(name string) (*Cluster, bool) {
	for i := range l.Clusters {
		if l.Clusters[i].Name == name {
			return &l.Clusters[i], true
		}
	}
	return nil, false
}

// Node finds a node of the cluster by name.
func (c *Cluster) Node(name string) (Node, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// ControlPlanes lists every control plane, the hub's first.
func (l *Lab) ControlPlanes() []ControlPlane {
	var out []ControlPlane
	if l.Hub != nil {
		out = append(out, *l.Hub)
	}
	for _, c := range l.Clusters {
		out = append(out, c.ControlPlane)
	}
	return out
}

func firstCIDR(cidrs []string) (netip.Prefix, error) {
	if len(cidrs) == 0 {
		return netip.Prefix{}, fmt.Errorf("no CIDR")
	}
	p, err := netip.ParsePrefix(cidrs[0])
	if err != nil {
		return netip.Prefix{}, err
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("the lab's first CIDR must be IPv4, got %s", p)
	}
	return p.Masked(), nil
}

// bitsFor is the number of bits needed to number n+1 subnets (subnet 0 is left unused).
func bitsFor(n int) int {
	b := 0
	for (1 << b) < n+1 {
		b++
	}
	return b
}

func nthAddr(base netip.Addr, n int) netip.Addr {
	a := base.As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
