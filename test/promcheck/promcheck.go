package promcheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// Bin is the directory of prometheus and promtool under the checkout at root.
func Bin(root string) string {
	return filepath.Join(root, "bin", "prometheus", monitoring.PrometheusVersion)
}

// Promtool is the path of promtool, or skips t (fails it under CI) when it is not built.
func Promtool(t testing.TB) string {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(Bin(root), "promtool")
	if _, err := os.Stat(p); err != nil {
		require.Skip(t, "%s missing (make prometheus-binaries): %v", p, err)
	}
	return p
}

// Metrics fails t with promtool's findings when `promtool check metrics` finds a problem
// in the families of text (the exposition format) whose names start with prefix: the
// daemon's own, not the libraries' beside them.
func Metrics(t testing.TB, text []byte, prefix string) {
	t.Helper()
	own := Families(t, text, prefix)
	if len(own) == 0 {
		t.Fatalf("no %s* metrics to check in:\n%s", prefix, text)
	}
	cmd := exec.Command(Promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(own)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v:\n%s\non:\n%s", err, out, own)
	}
}

// Families is the part of text (the exposition format) about the families named
// prefix*, with their HELP and TYPE lines.
func Families(t testing.TB, text []byte, prefix string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.SplitAfter(string(text), "\n") {
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		}
		if strings.HasPrefix(name, prefix) {
			out = append(out, line...)
		}
	}
	return out
}

// Gathered is what g serves, in the text exposition format.
func Gathered(t testing.TB, g prometheus.Gatherer) []byte {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}
