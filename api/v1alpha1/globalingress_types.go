package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GlobalIngressSpec holds the global addresses of one exported service in the exporting
// cluster. One object per exported service keeps every object small: a cluster with
// 10,000 exports holds 10,000 objects of a few hundred bytes, far from etcd's ~1.5 MB
// per-object limit, and a change to one export rewrites one small object.
type GlobalIngressSpec struct {
	// ServiceName of the exported service, in the object's namespace.
	// +required
	// +kubebuilder:validation:MaxLength=63
	ServiceName string `json:"serviceName"`

	// ServiceNamespace of the exported service.
	// +required
	// +kubebuilder:validation:MaxLength=63
	ServiceNamespace string `json:"serviceNamespace"`

	// GlobalIP of a ClusterSetIP service: traffic to it is DNATed to the service's
	// cluster IP on the active gateway.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	GlobalIP string `json:"globalIP,omitempty"`

	// ServiceIP is the local cluster IP GlobalIP maps to.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	ServiceIP string `json:"serviceIP,omitempty"`

	// Endpoints of a headless service: each pod's global address, for per-pod SNAT and
	// DNAT.
	// +optional
	// +listType=map
	// +listMapKey=globalIP
	// +kubebuilder:validation:MaxItems=1000
	Endpoints []GlobalEndpoint `json:"endpoints,omitempty"`
}

// GlobalEndpoint maps one pod to its global address.
type GlobalEndpoint struct {
	// GlobalIP of the pod.
	// +required
	// +kubebuilder:validation:MaxLength=45
	GlobalIP string `json:"globalIP"`
	// PodIP the global IP maps to.
	// +required
	// +kubebuilder:validation:MaxLength=45
	PodIP string `json:"podIP"`
	// PodName is the pod the endpoint belongs to; the allocation's owner, so a pod that
	// comes back with a new pod IP keeps its global IP.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName,omitempty"`
	// Hostname of the endpoint, for <hostname>.<cluster>.<svc>.<ns>.svc.clusterset.local.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Hostname string `json:"hostname,omitempty"`
}

// GlobalIngress is the globalnet allocation for one exported service, written by the hub
// into the exporting cluster's strait-system namespace; its gateway programs the NAT.
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceName`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.serviceNamespace`
// +kubebuilder:printcolumn:name="Global IP",type=string,JSONPath=`.spec.globalIP`
// +kubebuilder:printcolumn:name="Service IP",type=string,JSONPath=`.spec.serviceIP`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GlobalIngress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec GlobalIngressSpec `json:"spec"`
}

// GlobalIngressList is a list of GlobalIngresses.
// +kubebuilder:object:root=true
type GlobalIngressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GlobalIngress `json:"items"`
}
