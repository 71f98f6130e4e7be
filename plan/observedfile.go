package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// DecodeObserved adds the objects of a YAML stream (Services, EndpointSlices,
// ServiceExports, Gateways, Peers, a Membership, GlobalIngresses, the kube-system
// Namespace, or a v1 List of them)
// to the facts of one member, as `kubectl get -o yaml` prints them. Unknown kinds and
// unknown fields are errors naming the document.
func DecodeObserved(name string, data []byte, f *MemberFacts) error {
	for i, doc := range SplitYAML(data) {
		if err := decodeObservedDoc(doc, f); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i+1, err)
		}
	}
	return nil
}

func decodeObservedDoc(doc []byte, f *MemberFacts) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.Kind {
	case "List", "ServiceList", "EndpointSliceList", "ServiceExportList", "GatewayList", "PeerList", "GlobalIngressList":
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := yaml.Unmarshal(doc, &list); err != nil {
			return err
		}
		for j, item := range list.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return err
			}
			if err := decodeObservedDoc(b, f); err != nil {
				return fmt.Errorf("items[%d]: %w", j, err)
			}
		}
		return nil
	case "Service":
		return appendStrict(doc, &f.Services)
	case "EndpointSlice":
		return appendStrict(doc, &f.EndpointSlices)
	case "ServiceExport":
		return appendStrict(doc, &f.ServiceExports)
	case "Gateway":
		return appendStrict(doc, &f.Gateways)
	case "Peer":
		return appendStrict(doc, &f.Peers)
	case "GlobalIngress":
		return appendStrict(doc, &f.GlobalIngresses)
	case "Membership":
		var m straitv1.Membership
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return err
		}
		f.Membership = &m
		return nil
	case "Namespace":
		var ns corev1.Namespace
		if err := yaml.UnmarshalStrict(doc, &ns); err != nil {
			return err
		}
		if ns.Name != metav1.NamespaceSystem {
			return fmt.Errorf("namespace %q: of the namespaces only kube-system is a fact (its UID tells which cluster this is)", ns.Name)
		}
		f.KubeSystemUID = ns.UID
		return nil
	case "":
		return fmt.Errorf("no kind")
	}
	return fmt.Errorf("kind %s is not an observed fact (want Service, EndpointSlice, ServiceExport, Gateway, Peer, Membership, GlobalIngress or the kube-system Namespace)", tm.Kind)
}

func appendStrict[T any](doc []byte, into *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return err
	}
	*into = append(*into, v)
	return nil
}
