package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// New has every type Strait reads or writes, in the hub and in members.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, straitv1.AddToScheme, mcsv1.Install} {
		if err := add(s); err != nil {
			panic(err) // only on a programming error: conflicting type registrations
		}
	}
	return s
}
