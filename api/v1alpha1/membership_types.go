package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MembershipSpec is this cluster's identity and settings as the hub decided them.
type MembershipSpec struct {
	// ClusterSet is "<namespace>/<name>" of the ClusterSet in the hub.
	// +required
	// +kubebuilder:validation:MaxLength=253
	ClusterSet string `json:"clusterSet"`

	// ClusterID is this cluster's name in the clusterset.
	// +required
	// +kubebuilder:validation:MaxLength=63
	ClusterID string `json:"clusterID"`

	// PodCIDRs of this cluster.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	PodCIDRs []string `json:"podCIDRs"`

	// ServiceCIDRs of this cluster.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	ServiceCIDRs []string `json:"serviceCIDRs"`

	// Globalnet is this cluster's part of the global address space; nil without globalnet.
	// +optional
	Globalnet *MemberGlobalnet `json:"globalnet,omitempty"`

	// Cable settings shared by every gateway of the clusterset.
	// +required
	Cable MemberCable `json:"cable"`

	// GatewayNodeSelector selects the nodes that may become the gateway.
	// +optional
	GatewayNodeSelector map[string]string `json:"gatewayNodeSelector,omitempty"`

	// GatewayEndpoint is how the other clusters reach this cluster's gateways, from the
	// ClusterSet; nil for each node's InternalIP.
	// +optional
	GatewayEndpoint *GatewayEndpoint `json:"gatewayEndpoint,omitempty"`

	// DNS settings for `straitd dns`.
	// +optional
	DNS DNSSpec `json:"dns,omitempty"`
}

// MemberGlobalnet is a cluster's global CIDR and egress addresses.
type MemberGlobalnet struct {
	// GlobalCIDR is the cluster's range of the global address space.
	// +required
	// +kubebuilder:validation:MaxLength=43
	GlobalCIDR string `json:"globalCIDR"`

	// EgressIPs are the global addresses outbound traffic to other clusters is
	// masqueraded to.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	EgressIPs []string `json:"egressIPs"`
}

// MemberCable is the cable as a member's gateways run it.
type MemberCable struct {
	// Driver: wireguard, ipsec or vxlan.
	// +required
	Driver CableDriver `json:"driver"`
	// Port gateways listen on.
	// +required
	Port int32 `json:"port"`
	// PSKSecretName names the Secret in strait-system with key "psk" (ipsec only).
	// +optional
	PSKSecretName string `json:"pskSecretName,omitempty"`
}

// MembershipStatus is written by the member's daemons.
type MembershipStatus struct {
	// Conditions of the member's data plane.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Daemons are the member's running agents and DNS servers, each entry written by
	// the daemon it names (server-side apply, one field manager per daemon) when it
	// starts and removed when it stops, or by the active gateway's agent once the
	// daemon's node is gone.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=5000
	Daemons []DaemonStatus `json:"daemons,omitempty"`

	// Prints are what the member holds of the objects a hub wrote into it, per
	// ClusterSet and kind, for the kinds the hub does not watch (ServiceImports, the
	// Services and EndpointSlices it derives, and Peers): written by strait dns from its own
	// watches, so that the hub compares them with its record of its writes without
	// holding every such object of every member (docs/design-decisions.md, step 4).
	// +optional
	// +listType=map
	// +listMapKey=clusterSet
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=64
	Prints []MemberPrint `json:"prints,omitempty"`

	// Connections summarise the member's Peers as strait dns last saw them: the
	// ClusterSet's status.clusters[].connections and peersConnected are read from here,
	// so that the hub need not watch every member's Peers (members² objects). Written
	// with the prints, under the same field manager; a change of latency alone is
	// written at most every 30 s.
	// +optional
	Connections *MemberConnections `json:"connections,omitempty"`
}

// MaxReportedConnections is how many connections a member's report lists: as many as
// the ClusterSet's status shows of one cluster at most, once it has more than 32
// clusters (its share of the 1,000 there, plan.MaxStatusConnections); below that a
// cluster has fewer peers.
const MaxReportedConnections = 32

// MemberConnections are a member's Peers that have a state (their active gateway
// wrote one): how many, how many Connected, and the first of them, those not Connected
// first, each group by cluster name.
type MemberConnections struct {
	// Total is how many of the member's Peers have a state.
	// +required
	// +kubebuilder:validation:Minimum=0
	Total int32 `json:"total"`
	// Connected is how many of them are Connected.
	// +required
	// +kubebuilder:validation:Minimum=0
	Connected int32 `json:"connected"`
	// Peers are the first MaxReportedConnections of them, those not Connected first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Peers []ConnectionStatus `json:"peers,omitempty"`
}

// MemberPrint is a member's count and fingerprint sum of the objects of one kind that
// carry one ClusterSet's labels (app.kubernetes.io/managed-by: strait-hub and
// strait.io/clusterset), each object fingerprinted by its kind, namespace, name and
// resourceVersion (a Peer, whose status its active gateway writes: by its generation,
// labels and annotations), as the hub fingerprints the member's answers to its writes.
type MemberPrint struct {
	// ClusterSet is the strait.io/clusterset label of the objects: "<namespace>.<name>"
	// of the ClusterSet in the hub.
	// +required
	// +kubebuilder:validation:MaxLength=317
	ClusterSet string `json:"clusterSet"`
	// Kind of the objects: ServiceImport, Service, EndpointSlice or Peer.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Count of the objects.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
	// Sum of their fingerprints modulo 2^64, 16 hexadecimal digits.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	Sum string `json:"sum"`
}

// Membership is this cluster's identity in the clusterset; one per member, named
// "membership", written by the hub.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterID`
// +kubebuilder:printcolumn:name="ClusterSet",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="Cable",type=string,JSONPath=`.spec.cable.driver`
// +kubebuilder:printcolumn:name="Global CIDR",type=string,JSONPath=`.spec.globalnet.globalCIDR`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Membership struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MembershipSpec `json:"spec"`
	// +optional
	Status MembershipStatus `json:"status,omitempty"`
}

// MembershipList is a list of Memberships.
// +kubebuilder:object:root=true
type MembershipList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Membership `json:"items"`
}
