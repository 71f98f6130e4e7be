package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseValidateCompute feeds arbitrary bytes through Parse, Validate and Compute,
// seeded with the examples and the invalid corpus: nothing may panic, every error names
// a field under spec, and computing the same input twice gives the same output.
func FuzzParseValidateCompute(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*", "clusterset.yaml"))
	invalid, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	files = append(files, invalid...)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nspec:\n  clusters:\n  - name: a\n    podCIDRs: [\"::/0\"]\n    serviceCIDRs: [\"0.0.0.0/0\"]\n"))
	f.Add([]byte("apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nspec:\n  globalnet: {enabled: true, cidrRange: 255.255.255.252/30, clusterSize: 4}\n  clusters:\n  - {name: a, podCIDRs: [10.0.0.0/8], serviceCIDRs: [11.0.0.0/8]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := Parse(data)
		if err != nil {
			return
		}
		for _, e := range Validate(cs) {
			if !strings.HasPrefix(e.Field, "spec") {
				t.Fatalf("error without a field path under spec: %v", e)
			}
		}
		p1, errs1 := Compute(cs, nil)
		p2, errs2 := Compute(cs, nil)
		if (p1 == nil) != (p2 == nil) || errs1.ToAggregate() != nil && errs1.ToAggregate().Error() != errs2.ToAggregate().Error() {
			t.Fatalf("Compute is not deterministic: %v vs %v", errs1, errs2)
		}
		if p1 == nil {
			return
		}
		a, err := Render(p1, nil, FormatYAML)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Render(p2, nil, FormatYAML)
		if !bytes.Equal(a, b) {
			t.Fatal("the same ClusterSet rendered twice differs")
		}
	})
}
