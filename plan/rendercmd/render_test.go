package rendercmd

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/cli"
)

func render(t *testing.T, o *renderOptions, stdin string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runRender(o, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRenderGlobalnetExample(t *testing.T) {
	out, _, err := render(t, &renderOptions{
		file:     "../../examples/clusterset/globalnet/clusterset.yaml",
		observed: "../../examples/clusterset/globalnet/observed",
		clusters: []string{"g1"},
		output:   "yaml",
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: Peer", "- 242.2.0.0/24", "strait.io/target-cluster: g1", "kind: ServiceImport", "- 242.2.0."} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q", want)
		}
	}
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.Contains(doc, "kind: Peer\n") && strings.Contains(doc, "10.7.0.0/16") {
			t.Errorf("g1's Peer for g2 routes 10.7.0.0/16:\n%s", doc)
		}
	}
	if strings.Contains(out, "strait.io/target-cluster: g2") {
		t.Error("--cluster g1 printed g2's objects")
	}
}

func TestRenderRejectsOverlapWithoutGlobalnet(t *testing.T) {
	data, err := os.ReadFile("../../examples/clusterset/globalnet/clusterset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	off := strings.Replace(string(data), "enabled: true", "enabled: false", 1)
	out, errOut, err := render(t, &renderOptions{file: "-", output: "yaml"}, off)
	if !errors.Is(err, cli.ErrReported) || out != "" {
		t.Fatalf("err = %v, output %q; want cli.ErrReported and nothing printed", err, out)
	}
	var overlap string
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !strings.HasPrefix(line, "spec.") {
			t.Errorf("error line %q does not start with the field path", line)
		}
		if strings.Contains(line, "podCIDRs") {
			overlap = line
		}
	}
	for _, want := range []string{"g1", "g2", "10.7.0.0/16"} {
		if !strings.Contains(overlap, want) {
			t.Errorf("overlap error %q does not name %s", overlap, want)
		}
	}
}

func TestRenderJSONAndUnknownCluster(t *testing.T) {
	out, _, err := render(t, &renderOptions{file: "../../examples/clusterset/basic/clusterset.yaml", output: "json"}, "")
	if err != nil || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"kind": "List"`) {
		t.Fatalf("json output: %v %.80q", err, out)
	}
	_, _, err = render(t, &renderOptions{file: "../../examples/clusterset/basic/clusterset.yaml", clusters: []string{"c9"}, output: "yaml"}, "")
	if err == nil || !strings.Contains(err.Error(), `"c9"`) {
		t.Fatalf("unknown cluster: err = %v", err)
	}
}
