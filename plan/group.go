package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// ExportGroup is where a member holds the objects of one export group (a key of
// Groups.Keys other than BaseGroup, "namespace/name"), as this package names and
// labels them when it builds them (ObjectsOf): a hub that prunes one group finds there
// everything a pass over that group may have written, and nothing of another group.
type ExportGroup struct {
	// Named are the objects the group holds under names of their own, each an empty
	// object of its kind with only its namespace and name set: the ServiceExport, the
	// ServiceImport, the GlobalIngress (in strait-system) and the derived Service.
	Named []client.Object
	// SliceNamespace and SliceLabels find the group's EndpointSlices, which are named
	// per source cluster: those carrying every label of one of the sets, the MCS slices
	// by the MCS service-name label, the derived Service's by strait.io/service-import
	// (strait dns must not read them as MCS slices).
	SliceNamespace string
	SliceLabels    []map[string]string
}

// ExportGroupOf is where a member holds the objects of the export group named group
// ("namespace/name").
func ExportGroupOf(group string) (ExportGroup, error) {
	ns, name, ok := strings.Cut(group, "/")
	if !ok || ns == "" || name == "" {
		return ExportGroup{}, fmt.Errorf("group %q names no export (want namespace/name)", group)
	}
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	return ExportGroup{
		Named: []client.Object{
			&mcsv1.ServiceExport{ObjectMeta: meta(ns, name)},
			&mcsv1.ServiceImport{ObjectMeta: meta(ns, name)},
			&straitv1.GlobalIngress{ObjectMeta: meta(straitv1.SystemNamespace, GlobalIngressName(ns, name))},
			&corev1.Service{ObjectMeta: meta(ns, DerivedServiceName(name))},
		},
		SliceNamespace: ns,
		SliceLabels:    []map[string]string{{mcsv1.LabelServiceName: name}, {straitv1.LabelServiceImport: name}},
	}, nil
}

// GlobalIngressName is the name of the GlobalIngress of service namespace/name in
// strait-system: "name.namespace".
func GlobalIngressName(namespace, name string) string {
	return name + "." + namespace
}
