package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PeerSpec is what to route to a remote cluster and how to reach it.
type PeerSpec struct {
	// ClusterID of the remote cluster.
	// +required
	// +kubebuilder:validation:MaxLength=63
	ClusterID string `json:"clusterID"`

	// CIDRs routed to the remote cluster: its pod and service CIDRs, or its global CIDR
	// under globalnet.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	CIDRs []string `json:"cidrs"`

	// Endpoint is the remote cluster's active gateway; nil until it has one.
	// +optional
	Endpoint *PeerEndpoint `json:"endpoint,omitempty"`
}

// PeerEndpoint is how a remote gateway is reached.
type PeerEndpoint struct {
	// Gateway is the node name of the remote active gateway.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Gateway string `json:"gateway"`
	// IP is the address this cluster's gateway sends tunnel traffic to: the remote
	// gateway's advertised address. Empty when Hostname is to be resolved instead, or
	// when the remote is behind masquerade.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	IP string `json:"ip,omitempty"`
	// Hostname is resolved by this cluster's gateway to the address to send to, again
	// every RefreshInterval (the remote's endpoint type DNSName).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname,omitempty"`
	// RefreshInterval is how often Hostname is resolved again.
	// +optional
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
	// BehindMasquerade: the remote gateway cannot be dialed (it sits behind a source NAT
	// that forwards nothing in); it dials this cluster's gateway, which learns its
	// address from the authenticated handshake.
	// +optional
	BehindMasquerade bool `json:"behindMasquerade,omitempty"`
	// Port the remote gateway listens on.
	// +required
	Port int32 `json:"port"`
	// PublicKey of the remote cluster (wireguard), base64.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PublicKey string `json:"publicKey,omitempty"`
	// HealthCheckIP is an address inside the remote cluster's routed CIDRs that answers
	// ICMP echo on the remote gateway; used to measure latency and loss through the tunnel.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	HealthCheckIP string `json:"healthCheckIP,omitempty"`
	// HealthCheckIPv6 is HealthCheckIP's IPv6 counterpart, inside the remote cluster's
	// IPv6 CIDRs: health is measured in each family the two clusters share.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	HealthCheckIPv6 string `json:"healthCheckIPv6,omitempty"`
	// Driver the remote gateway runs; the same for the whole clusterset.
	// +required
	Driver CableDriver `json:"driver"`
}

// PeerHealthCheck is one address family's health-check round through the cable.
type PeerHealthCheck struct {
	// Family: IPv4 or IPv6.
	// +required
	// +kubebuilder:validation:Enum=IPv4;IPv6
	Family corev1.IPFamily `json:"family"`
	// Address is the remote gateway's health-check address of this family.
	// +required
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address"`
	// Sent and Received count the round's echo requests and their answers.
	// +required
	Sent int32 `json:"sent"`
	// +required
	Received int32 `json:"received"`
	// LatencyMicros is the mean round-trip time of the answered ones; empty when none was.
	// +optional
	LatencyMicros int64 `json:"latencyMicros,omitempty"`
	// LossPercent is the share of them unanswered.
	// +optional
	LossPercent int32 `json:"lossPercent,omitempty"`
}

// PeerStatus is written by the local active gateway.
type PeerStatus struct {
	// Conditions: Connected.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// State: Connected, Connecting or Error.
	// +optional
	State string `json:"state,omitempty"`
	// Gateway is the local node that reports this status.
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// LatencyMicros is the round-trip time through the tunnel of the last health-check
	// round: the mean of its answered echo requests (five, 100 ms apart, every
	// --health-interval of the active gateway's agent). It is not smoothed: every round
	// replaces it, and a round with no answer leaves it empty. It is the first family's
	// the two clusters share (IPv4 where they share it); HealthChecks has each family's.
	// +optional
	LatencyMicros int64 `json:"latencyMicros,omitempty"`
	// LossPercent is the share of the last health-check round's echo requests that went
	// unanswered (with five a round: 0, 20, 40, 60, 80 or 100). Like LatencyMicros it is
	// one round's, not an average.
	// +optional
	LossPercent int32 `json:"lossPercent,omitempty"`
	// HealthChecks is the last round's result in each address family the two clusters
	// share: the peer is Connected when every one of them answers.
	// +optional
	// +listType=map
	// +listMapKey=family
	// +kubebuilder:validation:MaxItems=2
	HealthChecks []PeerHealthCheck `json:"healthChecks,omitempty"`
	// Endpoint is the remote address and port the cable sends to now: the advertised one,
	// or, behind a NAT, where the remote's authenticated packets come from.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Endpoint string `json:"endpoint,omitempty"`
	// NATDetected: a NAT sits between the two gateways (one of them does not own the
	// address it is reached at, or the remote's packets come from an address or port it
	// did not advertise).
	// +optional
	NATDetected bool `json:"natDetected,omitempty"`
	// Initiator is the side that opens the cable: Local, Remote (this side only answers),
	// Both (WireGuard and VXLAN without masquerade), or None when both are behind
	// masquerade and neither can.
	// +optional
	// +kubebuilder:validation:Enum=Local;Remote;Both;None
	Initiator string `json:"initiator,omitempty"`
	// LastHandshake of the tunnel, where the driver knows one.
	// +optional
	LastHandshake *metav1.Time `json:"lastHandshake,omitempty"`
	// RxBytes received from the peer.
	// +optional
	RxBytes int64 `json:"rxBytes,omitempty"`
	// TxBytes sent to the peer.
	// +optional
	TxBytes int64 `json:"txBytes,omitempty"`
}

// Peer is one remote cluster as this member sees it; written by the hub, status by the
// active gateway. `kubectl get peers` is the first thing an operator looks at.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterID`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint.ip`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.endpoint.driver`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="In use",type=string,JSONPath=`.status.endpoint`,priority=1
// +kubebuilder:printcolumn:name="NAT",type=boolean,JSONPath=`.status.natDetected`,priority=1
// +kubebuilder:printcolumn:name="Initiator",type=string,JSONPath=`.status.initiator`,priority=1
// +kubebuilder:printcolumn:name="Latency(us)",type=integer,JSONPath=`.status.latencyMicros`
// +kubebuilder:printcolumn:name="CIDRs",type=string,JSONPath=`.spec.cidrs`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Peer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PeerSpec `json:"spec"`
	// +optional
	Status PeerStatus `json:"status,omitempty"`
}

// PeerList is a list of Peers.
// +kubebuilder:object:root=true
type PeerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Peer `json:"items"`
}
