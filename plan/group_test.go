package plan

import (
	"reflect"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExportGroupFindsEveryObjectOfItsGroup: every object the plan builds for an export
// group in a member is where ExportGroupOf says the group's objects are, by its kind,
// namespace and name or, for an EndpointSlice, by its namespace and one of the label
// sets. The hub prunes a group there; an object it built elsewhere would never go.
func TestExportGroupFindsEveryObjectOfItsGroup(t *testing.T) {
	seen := map[string]bool{} // kinds met, so that the examples are known to cover them
	for _, name := range examples(t) {
		cs, obs := loadExample(t, name)
		p := mustCompute(t, cs, obs)
		for _, c := range p.Clusters() {
			for g := range groupMap(p.Groups(c)) {
				if g == BaseGroup {
					continue
				}
				eg, err := ExportGroupOf(g)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, o := range p.ObjectsOf(c, map[string]bool{g: true}) {
					kind := o.GetObjectKind().GroupVersionKind().Kind
					seen[kind] = true
					if !inGroup(eg, kind, o) {
						t.Errorf("%s: %s's %s %s/%s of group %s is not where ExportGroupOf(%q) looks", name, c, kind, o.GetNamespace(), o.GetName(), g, g)
					}
				}
			}
		}
	}
	for _, kind := range []string{"ServiceExport", "ServiceImport", "EndpointSlice", "GlobalIngress", "Service"} {
		if !seen[kind] {
			t.Errorf("no example builds a %s of an export group: the test covers less than the hub prunes", kind)
		}
	}
	if _, err := ExportGroupOf(BaseGroup); err == nil {
		t.Error("ExportGroupOf(BaseGroup): no error, want one (the base group is no export)")
	}
}

func inGroup(eg ExportGroup, kind string, o client.Object) bool {
	if sl, ok := o.(*discoveryv1.EndpointSlice); ok {
		for _, labels := range eg.SliceLabels {
			all := sl.Namespace == eg.SliceNamespace
			for k, v := range labels {
				all = all && sl.Labels[k] == v
			}
			if all {
				return true
			}
		}
		return false
	}
	for _, n := range eg.Named {
		if kindOfObject(n) == kind && n.GetNamespace() == o.GetNamespace() && n.GetName() == o.GetName() {
			return true
		}
	}
	return false
}

// kindOfObject is the kind of an empty typed object, whose TypeMeta is not set: its
// Go type's name.
func kindOfObject(o client.Object) string {
	return reflect.TypeOf(o).Elem().Name()
}
