package render

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/test/corpus"
)

func render(t *testing.T, o *renderOptions, stdin string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runRender(o, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRenderGlobalnetExample(t *testing.T) {
	out, _, err := render(t, &renderOptions{
		file:     "../../../examples/clusterset/globalnet/clusterset.yaml",
		observed: "../../../examples/clusterset/globalnet/observed",
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
	data, err := os.ReadFile("../../../examples/clusterset/globalnet/clusterset.yaml")
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
	out, _, err := render(t, &renderOptions{file: "../../../examples/clusterset/basic/clusterset.yaml", output: "json"}, "")
	if err != nil || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"kind": "List"`) {
		t.Fatalf("json output: %v %.80q", err, out)
	}
	_, _, err = render(t, &renderOptions{file: "../../../examples/clusterset/basic/clusterset.yaml", clusters: []string{"c9"}, output: "yaml"}, "")
	if err == nil || !strings.Contains(err.Error(), `"c9"`) {
		t.Fatalf("unknown cluster: err = %v", err)
	}
}

// An ipsec clusterset's members each get a copy of the pre-shared key: render shows the
// Secret like every other object, without the key, which only the hub reads.
func TestRenderShowsTheIPsecPSKSecret(t *testing.T) {
	out, _, err := render(t, &renderOptions{file: "../../../examples/clusterset/three-clusters/clusterset.yaml", clusters: []string{"c2"}, output: "yaml"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.Contains(doc, "kind: Secret\n") {
			secrets = append(secrets, doc)
		}
	}
	if len(secrets) != 1 {
		t.Fatalf("render of c2 shows %d Secrets, want the PSK Secret once:\n%s", len(secrets), out)
	}
	for _, want := range []string{"name: strait-ipsec-psk", "namespace: strait-system", "type: Opaque",
		"app.kubernetes.io/managed-by: strait-hub", "strait.io/clusterset: strait-system.trio", "strait.io/target-cluster: c2"} {
		if !strings.Contains(secrets[0], want) {
			t.Errorf("the PSK Secret lacks %q:\n%s", want, secrets[0])
		}
	}
	if strings.Contains("\n"+secrets[0], "\ndata:") || strings.Contains(secrets[0], "stringData:") {
		t.Errorf("render shows PSK data, which only the hub may read:\n%s", secrets[0])
	}

	out, _, err = render(t, &renderOptions{file: "../../../examples/clusterset/basic/clusterset.yaml", output: "yaml"}, "")
	if err != nil || strings.Contains(out, "kind: Secret") {
		t.Errorf("a wireguard clusterset renders a Secret (err %v)", err)
	}
}

// Every ClusterSet of the invalid corpus is refused the way a user meets it: exit
// status 1, nothing on standard output, one line per error naming each wanted field.
func TestRenderRefusesEveryInvalidClusterSet(t *testing.T) {
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			out, errOut, err := render(t, &renderOptions{file: c.Path, output: "yaml"}, "")
			if !errors.Is(err, cli.ErrReported) || out != "" {
				t.Fatalf("err = %v, %d bytes of output; want the errors reported and nothing rendered\n%s", err, len(out), errOut)
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if !strings.HasPrefix(line, "spec.") {
					t.Errorf("error line %q does not start with the field path", line)
				}
			}
			if missing := corpus.Missing(errOut, c.Want); len(missing) > 0 {
				t.Errorf("the errors do not name %v:\n%s", missing, errOut)
			}
		})
	}
}

// Every example ClusterSet renders.
func TestRenderAcceptsEveryExample(t *testing.T) {
	files, err := filepath.Glob("../../../examples/clusterset/*/clusterset.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		out, errOut, err := render(t, &renderOptions{file: f, output: "yaml"}, "")
		if err != nil || !strings.Contains(out, "kind: Membership") {
			t.Errorf("%s: err = %v\n%s", f, err, errOut)
		}
	}
}
