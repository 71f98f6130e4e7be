package crds

import (
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"
)

// TestAllAreTheThreeMonitoringCRDs: All returns prometheus-operator's PodMonitor,
// PrometheusRule and ServiceMonitor CRDs, in that order (their files' names), each serving
// and storing monitoring.coreos.com/v1 with a schema the API server counts as
// structural (else it would prune nothing and flag the CRD NonStructuralSchema).
func TestAllAreTheThreeMonitoringCRDs(t *testing.T) {
	docs, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, doc := range docs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kinds = append(kinds, crd.Spec.Names.Kind)
		if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
			t.Errorf("%s: %s %s, want an apiextensions.k8s.io/v1 CustomResourceDefinition", crd.Name, crd.APIVersion, crd.Kind)
		}
		if crd.Spec.Group != "monitoring.coreos.com" || crd.Name != crd.Spec.Names.Plural+".monitoring.coreos.com" {
			t.Errorf("%s: group %q, want monitoring.coreos.com and the name <plural>.monitoring.coreos.com", crd.Name, crd.Spec.Group)
		}
		if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: scope %s, want Namespaced", crd.Name, crd.Spec.Scope)
		}
		i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1" })
		if i < 0 {
			t.Errorf("%s: no version v1", crd.Name)
			continue
		}
		v1 := crd.Spec.Versions[i]
		if !v1.Served || !v1.Storage {
			t.Errorf("%s: v1 served %v, storage %v; want both", crd.Name, v1.Served, v1.Storage)
		}
		if v1.Schema == nil || v1.Schema.OpenAPIV3Schema == nil {
			t.Errorf("%s: v1 has no openAPIV3Schema", crd.Name)
			continue
		}
		if _, ok := v1.Schema.OpenAPIV3Schema.Properties["spec"]; !ok {
			t.Errorf("%s: v1's schema has no spec", crd.Name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Errorf("%s: v1's schema: %v", crd.Name, err)
			continue
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Errorf("%s: v1's schema is not structural: %v", crd.Name, err)
			continue
		}
		if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
			t.Errorf("%s: v1's schema is not structural: %v", crd.Name, errs.ToAggregate())
		}
	}
	if want := []string{"PodMonitor", "PrometheusRule", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Errorf("All() gives the kinds %v, want %v", kinds, want)
	}
}
