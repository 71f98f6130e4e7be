package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSetMemberKind is the kind name of ClusterSetMember.
const ClusterSetMemberKind = "ClusterSetMember"

// ClusterSetMemberName is the name of the ClusterSetMember of cluster in ClusterSet
// clusterSet: "<clusterSet>.<cluster>" (both DNS labels, so the name is unique and
// valid).
func ClusterSetMemberName(clusterSet, cluster string) string { return clusterSet + "." + cluster }

// ClusterSetMemberSpec names the member.
type ClusterSetMemberSpec struct {
	// ClusterSet is the name of the ClusterSet, in this object's namespace.
	// +required
	// +kubebuilder:validation:MaxLength=253
	ClusterSet string `json:"clusterSet"`

	// Cluster is the member's name in the ClusterSet.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
}

// ClusterSetMember is one member of a ClusterSet as the hub sees it: every member has
// one, written by the hub alone, owned by the ClusterSet (deleted with it) and removed
// once the member has left the ClusterSet and been cleaned. It carries LabelClusterSet
// as the objects in members do ("<namespace>.<name>" of the ClusterSet). The ClusterSet's
// status.clusters lists the same entries for up to MaxStatusClusters members, those
// that need attention first; a ClusterSet of 1,000 members would not fit in one etcd
// object with all of them.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=csm
// +kubebuilder:printcolumn:name="ClusterSet",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="Connected")].status`
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.status.activeGateway`
// +kubebuilder:printcolumn:name="Peers",type=string,JSONPath=`.status.peersConnected`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSetMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterSetMemberSpec `json:"spec"`
	// Status is what the ClusterSet's status.clusters[] holds for the member. It is not
	// a subresource: the hub writes the whole object, in one request.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSetMemberList is a list of ClusterSetMembers.
// +kubebuilder:object:root=true
type ClusterSetMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSetMember `json:"items"`
}
