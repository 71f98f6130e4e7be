package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSetKind is the kind name of ClusterSet.
const ClusterSetKind = "ClusterSet"

// ClusterSetSpec is the whole desired clusterset, as kept in git.
type ClusterSetSpec struct {
	// Clusters are the member clusters. The name of each is its cluster ID.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	Clusters []ClusterSpec `json:"clusters"`

	// Cable says how gateways connect to each other.
	// +optional
	Cable CableSpec `json:"cable,omitempty"`

	// Globalnet gives every cluster a range of a shared global address space, so that
	// clusters with overlapping pod or service CIDRs can talk through NAT.
	// +optional
	Globalnet *GlobalnetSpec `json:"globalnet,omitempty"`

	// Exports are the services exported to the whole clusterset.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Exports []ExportSpec `json:"exports,omitempty"`

	// ExportPolicy says whether ServiceExports that people create directly in a member
	// are honoured (MemberExports) or only the exports listed here (Declared).
	// +optional
	// +kubebuilder:default=Declared
	ExportPolicy ExportPolicy `json:"exportPolicy,omitempty"`

	// DNS configures the clusterset DNS server in every member.
	// +optional
	DNS DNSSpec `json:"dns,omitempty"`

	// Suspend stops the hub from writing to members. Status is still reported.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Interval is how often the hub re-plans without a triggering event: from 10s to 24h.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || (duration(self) >= duration('10s') && duration(self) <= duration('24h'))",message="the hub re-plans every interval: it must be from 10s to 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// ClusterSpec is one member cluster.
type ClusterSpec struct {
	// Name is the cluster ID: an RFC 1123 label, unique in the clusterset.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	Name string `json:"name"`

	// KubeConfig references a Secret in the ClusterSet's namespace holding a kubeconfig
	// for the member's API server.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// PodCIDRs are the cluster's pod networks, IPv4 or IPv6 or both (dual-stack). Two
	// clusters connect in the families they share; under globalnet IPv4 is translated and
	// IPv6 routed as it is.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="not a CIDR: want a network address and a prefix length, such as 10.8.0.0/16"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="host bits are set: write the network address, with every bit past the prefix length zero (10.1.0.0/16, not 10.1.0.1/16)"
	PodCIDRs []string `json:"podCIDRs"`

	// ServiceCIDRs are the cluster's service networks, of the families of its PodCIDRs.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="not a CIDR: want a network address and a prefix length, such as 10.88.0.0/16"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="host bits are set: write the network address, with every bit past the prefix length zero (10.1.0.0/16, not 10.1.0.1/16)"
	ServiceCIDRs []string `json:"serviceCIDRs"`

	// GlobalCIDR pins the cluster's range of the globalnet address space: inside
	// spec.globalnet.cidrRange, of spec.globalnet.clusterSize addresses. Without it the
	// hub allocates one and keeps it for as long as the cluster is a member.
	// +optional
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="not a CIDR: want a network address and a prefix length, such as 242.1.0.0/16"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self).ip().family() == 4",message="must be IPv4: globalnet translates IPv4 only"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="host bits are set: write the network address, with every bit past the prefix length zero (10.1.0.0/16, not 10.1.0.1/16)"
	GlobalCIDR string `json:"globalCIDR,omitempty"`

	// Gateway selects the cluster's gateway nodes.
	// +optional
	Gateway GatewaySelection `json:"gateway,omitempty"`
}

// GatewaySelection selects gateway nodes and how they are reached.
type GatewaySelection struct {
	// NodeSelector selects the nodes that may become the cluster's gateway. Defaults to
	// nodes labelled strait.io/gateway=true.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Endpoint says where the other clusters' gateways send this cluster's tunnel
	// traffic. Without it: each gateway node's InternalIP. A node's strait.io/gateway-ip
	// annotation overrides it for that node alone.
	// +optional
	Endpoint *GatewayEndpoint `json:"endpoint,omitempty"`
}

// GatewayEndpointType says how a cluster's gateways are reached.
// +kubebuilder:validation:Enum=InternalIP;Address;ExternalIP;LoadBalancer;DNSName;Masquerade
type GatewayEndpointType string

// Gateway endpoint types.
const (
	// EndpointInternalIP: each gateway node's InternalIP; no NAT in between.
	EndpointInternalIP GatewayEndpointType = "InternalIP"
	// EndpointAddress: fixed public addresses a NAT maps to the gateways (address for the
	// whole cluster, or nodeAddresses one per gateway node, 1:1).
	EndpointAddress GatewayEndpointType = "Address"
	// EndpointExternalIP: each gateway node's ExternalIP, as a cloud provider sets it.
	EndpointExternalIP GatewayEndpointType = "ExternalIP"
	// EndpointLoadBalancer: the address of a Service of type LoadBalancer in the member.
	EndpointLoadBalancer GatewayEndpointType = "LoadBalancer"
	// EndpointDNSName: a DNS name that the dialing gateways resolve every
	// refreshInterval.
	EndpointDNSName GatewayEndpointType = "DNSName"
	// EndpointMasquerade: behind a source NAT that forwards nothing in; this cluster's
	// gateways dial out and keep the NAT's mapping alive, nobody dials them.
	EndpointMasquerade GatewayEndpointType = "Masquerade"
)

// DefaultEndpointRefresh is how often a DNSName endpoint is resolved again by default.
const DefaultEndpointRefresh = 60 * time.Second

// GatewayEndpoint is how a cluster's gateways are reached from the other clusters.
type GatewayEndpoint struct {
	// Type: InternalIP, Address, ExternalIP, LoadBalancer, DNSName or Masquerade.
	// +required
	Type GatewayEndpointType `json:"type"`

	// Address (type Address) is the one public address of every gateway of the cluster:
	// a NAT that forwards the cable's port to whichever gateway is active.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address,omitempty"`

	// NodeAddresses (type Address) are one public address per gateway node, each mapped
	// 1:1 to its node (the cloud case); a standby's is advertised when it takes over.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MaxItems=64
	NodeAddresses []NodeAddress `json:"nodeAddresses,omitempty"`

	// Service (type LoadBalancer) is the Service in the member whose first
	// status.loadBalancer.ingress address the other clusters send to.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// DNSName (type DNSName) is resolved by the dialing gateways to its first IPv4
	// address.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DNSName string `json:"dnsName,omitempty"`

	// RefreshInterval (type DNSName) is how often the dialing gateways resolve DNSName
	// again: from 5s to 1h; 60s by default.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
}

// NodeAddress is one gateway node's public address.
type NodeAddress struct {
	// Node is the gateway node's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// Address is its public address.
	// +required
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address"`
}

// ServiceReference names a Service in a member cluster.
type ServiceReference struct {
	// Namespace of the Service.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the Service.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// CableDriver names how gateways encapsulate traffic between clusters.
// +kubebuilder:validation:Enum=wireguard;ipsec;vxlan
type CableDriver string

// Cable drivers.
const (
	CableWireGuard CableDriver = "wireguard"
	CableIPsec     CableDriver = "ipsec"
	CableVXLAN     CableDriver = "vxlan"
)

// Default cable ports, distinct from Submariner's (4500/4490/4800) so both can run during
// a migration.
const (
	DefaultWireGuardPort int32 = 51871
	DefaultIPsecPort     int32 = 4501
	DefaultVXLANPort     int32 = 4803
)

// CableSpec says how gateways connect.
// +kubebuilder:validation:XValidation:rule="!has(self.driver) || self.driver != 'ipsec' || has(self.pskSecretRef)",message="the ipsec driver needs a Secret with the pre-shared key",fieldPath=".pskSecretRef",reason="FieldValueRequired"
type CableSpec struct {
	// Driver is the tunnel: wireguard (default), ipsec or vxlan (unencrypted).
	// +optional
	// +kubebuilder:default=wireguard
	Driver CableDriver `json:"driver,omitempty"`

	// Port is the UDP port gateways listen on. Defaults per driver: wireguard 51871,
	// ipsec 4501 (NAT-T), vxlan 4803.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// PSKSecretRef names a Secret in the ClusterSet's namespace with key "psk", the IPsec
	// pre-shared key. The hub copies it to every member.
	// +optional
	PSKSecretRef *meta.LocalObjectReference `json:"pskSecretRef,omitempty"`
}

// GlobalnetSpec configures the global address space.
type GlobalnetSpec struct {
	// Enabled turns globalnet on. When on, every cluster gets a global CIDR, remote
	// clusters route only global CIDRs, and pod and service CIDRs may overlap.
	// +required
	Enabled bool `json:"enabled"`

	// CIDRRange is the global address space clusters' global CIDRs are cut from.
	// +optional
	// +kubebuilder:default="242.0.0.0/8"
	// +kubebuilder:validation:MaxLength=18
	// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self).ip().family() == 4",message="must be an IPv4 CIDR such as 242.0.0.0/8"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="host bits are set: write the network address, with every bit past the prefix length zero (10.1.0.0/16, not 10.1.0.1/16)"
	CIDRRange string `json:"cidrRange,omitempty"`

	// ClusterSize is the number of global addresses each cluster gets; a power of two.
	// A pinned globalCIDR must have exactly this many addresses.
	// +optional
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=4
	// +kubebuilder:validation:Maximum=16777216
	ClusterSize int32 `json:"clusterSize,omitempty"`

	// ClusterEgressIPs is how many global addresses a cluster's outbound traffic is
	// masqueraded to.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	ClusterEgressIPs int32 `json:"clusterEgressIPs,omitempty"`
}

// Globalnet defaults.
const (
	DefaultGlobalCIDRRange  = "242.0.0.0/8"
	DefaultClusterSize      = 65536
	DefaultClusterEgressIPs = 8
)

// ExportSpec exports one service to the clusterset.
type ExportSpec struct {
	// Namespace of the service; the same in every cluster (namespace sameness).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// Name of the service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Clusters that export the service. Empty: every member that has it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSetIP says which clusters' endpoints stand behind the service's clusterset
	// IP in each member. AllClusters (the default): every exporting cluster's, in every
	// member. PreferLocal: in a member that exports the service, its own endpoints alone
	// while it has a ready one, every exporting cluster's when it has none; members
	// that do not export it balance over all. kube-proxy's trafficDistribution
	// PreferClose does not span clusters; this does.
	// +optional
	// +kubebuilder:default=AllClusters
	ClusterSetIP ClusterSetIPEndpoints `json:"clusterSetIP,omitempty"`
}

// ClusterSetIPEndpoints is which clusters' endpoints a member's clusterset IP leads to.
// +kubebuilder:validation:Enum=AllClusters;PreferLocal
type ClusterSetIPEndpoints string

// Clusterset IP endpoint choices.
const (
	// ClusterSetIPAllClusters balances over every exporting cluster's endpoints.
	ClusterSetIPAllClusters ClusterSetIPEndpoints = "AllClusters"
	// ClusterSetIPPreferLocal keeps an exporting member on its own endpoints while it
	// has a ready one.
	ClusterSetIPPreferLocal ClusterSetIPEndpoints = "PreferLocal"
)

// ExportPolicy says which ServiceExports count.
// +kubebuilder:validation:Enum=Declared;MemberExports
type ExportPolicy string

// Export policies.
const (
	// ExportPolicyDeclared: only exports listed in the ClusterSet; git is the whole truth.
	ExportPolicyDeclared ExportPolicy = "Declared"
	// ExportPolicyMemberExports: also ServiceExports people create in members.
	ExportPolicyMemberExports ExportPolicy = "MemberExports"
)

// DNSSpec configures `straitd dns` in every member.
type DNSSpec struct {
	// ExtraZones are served in addition to clusterset.local.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	ExtraZones []string `json:"extraZones,omitempty"`

	// DisableClusterNames turns off <cluster>.<svc>.<ns>.svc.clusterset.local for strict
	// MCS conformance.
	// +optional
	DisableClusterNames bool `json:"disableClusterNames,omitempty"`

	// TTLSeconds of answers.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	TTLSeconds int32 `json:"ttlSeconds,omitempty"`

	// ServiceAnswer is what <svc>.<ns>.svc.clusterset.local answers for a ClusterSetIP
	// import: ClusterSetIP (the MCS API's answer) is the import's clusterset IP, which
	// kube-proxy balances over the ready endpoints of every exporting cluster;
	// LocalFirst is one cluster's address per answer, the local cluster's while its
	// export is ready, else rotating over the connected clusters'.
	// +optional
	// +kubebuilder:default=ClusterSetIP
	ServiceAnswer DNSServiceAnswer `json:"serviceAnswer,omitempty"`
}

// DNSServiceAnswer is what the clusterset name of a ClusterSetIP import answers.
// +kubebuilder:validation:Enum=ClusterSetIP;LocalFirst
type DNSServiceAnswer string

// DNS service answers.
const (
	// ServiceAnswerClusterSetIP answers the ServiceImport's clusterset IP (spec.ips).
	ServiceAnswerClusterSetIP DNSServiceAnswer = "ClusterSetIP"
	// ServiceAnswerLocalFirst answers one exporting cluster's address: the local one
	// first, then round-robin over the connected clusters.
	ServiceAnswerLocalFirst DNSServiceAnswer = "LocalFirst"
)

// ClusterSetStatus is what the hub observed and did.
type ClusterSetStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the generation the status was computed for; 0 until the hub
	// has seen the ClusterSet (the API server defaults it), so that kstatus (Flux's
	// health checks, kubectl wait) counts a ClusterSet that no hub has looked at yet as
	// in progress rather than current.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Clusters is the state of each member. Only the hub writes it, whole (atomic: the
	// API server tracks it as one field, not a field per member).
	// +optional
	// +listType=atomic
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// Exports is the state of exported services: those with a conflict or without any
	// exporting service first, then the rest by namespace and name, at most 1000 so the
	// object stays small with 10,000 exports. Summary counts them all; every member's
	// ServiceExports carry the per-cluster conditions.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Exports []ExportStatus `json:"exports,omitempty"`

	// Summary counts for print columns.
	// +optional
	Summary ClusterSetSummary `json:"summary,omitempty"`

	// Hub is the hub process that wrote this status, and its build.
	// +optional
	Hub *DaemonStatus `json:"hub,omitempty"`
}

// ClusterSetSummary holds the numbers people see in `kubectl get clustersets`.
type ClusterSetSummary struct {
	// Clusters is "connected/total", e.g. "2/3".
	// +optional
	Clusters string `json:"clusters,omitempty"`
	// Exports is the number of exported services.
	// +optional
	Exports int32 `json:"exports,omitempty"`
	// Conflicts is the number of exports with a Conflict.
	// +optional
	Conflicts int32 `json:"conflicts,omitempty"`
	// Invalid is the number of exports that a cluster they name cannot serve: it has no
	// such Service, or one of a type the Multi-Cluster Services API does not export
	// (the ServiceExport's Valid condition is False there).
	// +optional
	Invalid int32 `json:"invalid,omitempty"`
}

// ClusterStatus is the state of one member.
type ClusterStatus struct {
	// Name of the cluster.
	// +required
	Name string `json:"name"`

	// Conditions: Connected (the hub reaches its API server), GatewayReady, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// GlobalCIDR allocated to the cluster under globalnet.
	// +optional
	GlobalCIDR string `json:"globalCIDR,omitempty"`

	// ActiveGateway is the node name of the active gateway.
	// +optional
	ActiveGateway string `json:"activeGateway,omitempty"`

	// Connections to the other members as the active gateway reports them, those not
	// Connected first. A large clusterset lists a share of them per member (every one
	// up to 32 members; in all at most 1,000, so that the ClusterSet fits in one etcd
	// object): the member's Peers have every one (strait show connections).
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Connections []ConnectionStatus `json:"connections,omitempty"`

	// PeersConnected counts the member's Peers whose state is Connected, of all its
	// Peers with a state: "254/254".
	// +optional
	PeersConnected string `json:"peersConnected,omitempty"`

	// Inventory counts the objects the hub keeps in this member, by kind.
	// +optional
	Inventory map[string]int32 `json:"inventory,omitempty"`

	// KubeSystemUID is the UID of the member's kube-system namespace, as the hub read it
	// when it connected: which cluster the kubeconfig reaches. Two clusters of one UID
	// are one cluster registered twice: the hub stalls the ClusterSet, and strait join
	// refuses to join a cluster under a second name.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	KubeSystemUID string `json:"kubeSystemUID,omitempty"`

	// KubeConfig is the reference the hub connects to the member with. It is kept after
	// the cluster leaves spec.clusters, together with a Ready=False condition with reason
	// Pruning, until the hub has removed everything it wrote there; a cluster that only
	// appears in status is being cleaned up.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`
}

// ConnectionStatus is one gateway-to-gateway connection.
type ConnectionStatus struct {
	// Cluster at the other end.
	// +required
	Cluster string `json:"cluster"`
	// State: Connected, Connecting or Error.
	// +optional
	State string `json:"state,omitempty"`
	// LatencyMicros is the Peer's: the round-trip time through the tunnel of the last
	// health-check round, not smoothed.
	// +optional
	LatencyMicros int64 `json:"latencyMicros,omitempty"`
}

// ExportStatus is the state of one exported service.
type ExportStatus struct {
	// Namespace of the service.
	// +required
	Namespace string `json:"namespace"`
	// Name of the service.
	// +required
	Name string `json:"name"`
	// Type: ClusterSetIP or Headless.
	// +optional
	Type string `json:"type,omitempty"`
	// Clusters whose export is part of the import.
	// +optional
	Clusters []string `json:"clusters,omitempty"`
	// Conflict says why a cluster's export was left out or changed, empty if none.
	// +optional
	Conflict string `json:"conflict,omitempty"`
}

// ClusterSet is the whole clusterset, as kept in git and synced to the hub.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cset
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.status.summary.clusters`
// +kubebuilder:printcolumn:name="Exports",type=integer,JSONPath=`.status.summary.exports`
// +kubebuilder:printcolumn:name="Cable",type=string,JSONPath=`.spec.cable.driver`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterSetSpec `json:"spec"`
	// +optional
	// +kubebuilder:default={}
	Status ClusterSetStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (Flux's conditions.Getter).
func (in *ClusterSet) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions (Flux's conditions.Setter).
func (in *ClusterSet) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// ClusterSetList is a list of ClusterSets.
// +kubebuilder:object:root=true
type ClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSet `json:"items"`
}
