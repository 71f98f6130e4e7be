package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HAState of a gateway node.
// +kubebuilder:validation:Enum=active;passive
type HAState string

// HA states.
const (
	HAActive  HAState = "active"
	HAPassive HAState = "passive"
)

// GatewaySpec is what a gateway-capable node's agent publishes about itself.
type GatewaySpec struct {
	// NodeName of the gateway node; also the object's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`
	// HAState: active drives the cables, passive waits.
	// +required
	HAState HAState `json:"haState"`
	// IP is the address other gateways send tunnel traffic to (the advertised address):
	// the node's own, or a NAT's in front of it. Empty when the node cannot know it (the
	// cluster is reached through a LoadBalancer Service or a DNS name, which the hub
	// resolves into the Peers) or when nothing can dial it (behind masquerade only).
	// +optional
	// +kubebuilder:validation:MaxLength=45
	IP string `json:"ip,omitempty"`
	// LocalIP is the node's own address the cable binds and sends from; it differs from
	// IP behind a NAT.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	LocalIP string `json:"localIP,omitempty"`
	// Port the cable listens on.
	// +required
	Port int32 `json:"port"`
	// PublicKey of the cluster (wireguard), base64.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PublicKey string `json:"publicKey,omitempty"`
	// HealthCheckIP answers ICMP echo through the tunnel: the gateway's IPv4 health-check
	// address, empty in an IPv6-only cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	HealthCheckIP string `json:"healthCheckIP,omitempty"`
	// HealthCheckIPv6 answers ICMPv6 echo through the tunnel: the gateway's IPv6
	// health-check address, in dual-stack and IPv6-only clusters.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	HealthCheckIPv6 string `json:"healthCheckIPv6,omitempty"`
	// Driver the gateway runs.
	// +required
	Driver CableDriver `json:"driver"`
}

// GatewayStatus is the gateway's health.
type GatewayStatus struct {
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastHeartbeat is refreshed by the agent while it runs.
	// +optional
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
}

// Gateway is one gateway-capable node of this member, written by its agent; the hub
// reads the active one into the Peers of the other members.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="HA",type=string,JSONPath=`.spec.haState`
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.spec.ip`
// +kubebuilder:printcolumn:name="Local IP",type=string,JSONPath=`.spec.localIP`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec GatewaySpec `json:"spec"`
	// +optional
	Status GatewayStatus `json:"status,omitempty"`
}

// GatewayList is a list of Gateways.
// +kubebuilder:object:root=true
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}
