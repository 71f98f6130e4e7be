package plan

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// TestGolden renders every example with its observed facts and compares every member's
// objects and the implied ClusterSet status with testdata/golden/<example>.yaml.
// `go test ./plan -update` rewrites them; review the diff like any other change.
func TestGolden(t *testing.T) {
	for _, ex := range examples(t) {
		t.Run(ex, func(t *testing.T) {
			cs, obs := loadExample(t, ex)
			got := goldenBytes(t, mustCompute(t, cs, obs))
			path := filepath.Join("testdata", "golden", ex+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./plan -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the plan's output; run go test ./plan -update and review the diff", path)
			}
		})
	}
}

func goldenBytes(t testing.TB, p *Plan) []byte {
	t.Helper()
	objs, err := Render(p, nil, FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	status, err := yaml.Marshal(p.Status)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(objs, []byte("---\n# ClusterSet status implied by the plan\n")...), status...)
}
