package kustomize

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/straitnet/strait/test/promcheck"
)

// TestAlertRulesPassTheirUnitTests runs promtool on the monitoring component's rule
// files: check rules (they parse, every alert has its labels and annotations as
// promtool lints them) and test rules (each alert fires on its fault, with the labels
// and annotations a person is paged with, and stays quiet on what only resembles it).
func TestAlertRulesPassTheirUnitTests(t *testing.T) {
	promtool := promcheck.Promtool(t)
	rules, err := filepath.Glob("components/monitoring/rules/*.rules.yaml")
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule files (%v)", err)
	}
	tests, err := filepath.Glob("components/monitoring/rules/*.test.yaml")
	if err != nil || len(tests) != len(rules) {
		t.Fatalf("rule files %v, tests %v: each rule file needs its test (%v)", rules, tests, err)
	}
	for _, args := range [][]string{append([]string{"check", "rules"}, rules...), append([]string{"test", "rules"}, tests...)} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args[:2], err, out)
		}
	}
}

// TestInstallDocsScrapeConfigIsValid: the plain Prometheus configuration docs/install.md
// gives users without prometheus-operator passes promtool check config.
func TestInstallDocsScrapeConfigIsValid(t *testing.T) {
	promtool := promcheck.Promtool(t)
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(global:.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/install.md has no Prometheus configuration (a yaml block starting with global:)")
	}
	file := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(file, block[1], 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check config of docs/install.md's configuration: %v\n%s\n%s", err, out, block[1])
	}
}
