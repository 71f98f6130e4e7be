package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "strait.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ClusterSet{}, &ClusterSetList{},
		&ClusterSetMember{}, &ClusterSetMemberList{},
		&Membership{}, &MembershipList{},
		&Peer{}, &PeerList{},
		&Gateway{}, &GatewayList{},
		&GlobalIngress{}, &GlobalIngressList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
