package kustomize

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// TestPrometheusConfigsAreValid runs promtool check config on the monitoring
// component's plain Prometheus configurations (prometheus/member.yaml and hub.yaml,
// which users without prometheus-operator run and the lab runs with its values) where
// they are: their rule_files, relative to the configuration's directory, name the
// component's rule files, which promtool checks too.
func TestPrometheusConfigsAreValid(t *testing.T) {
	promtool := promcheck.Promtool(t)
	for _, file := range prometheusConfigs {
		if out, err := exec.Command(promtool, "check", "config", file).CombinedOutput(); err != nil {
			t.Errorf("promtool check config %s: %v\n%s", file, err, out)
		}
	}
}

// prometheusConfigs are the monitoring component's plain Prometheus configurations.
var prometheusConfigs = []string{
	"components/monitoring/prometheus/member.yaml",
	"components/monitoring/prometheus/hub.yaml",
}

// TestInstallDocsShowTheMemberPrometheusConfig: the member's Prometheus configuration
// docs/install.md shows inline is prometheus/member.yaml's, from its first line that is
// not a comment (the file's header comment is not shown), so the two cannot drift.
func TestInstallDocsShowTheMemberPrometheusConfig(t *testing.T) {
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(prometheusConfigs[0])
	if err != nil {
		t.Fatal(err)
	}
	body := withoutHeaderComment(string(file))
	first, _, _ := strings.Cut(body, "\n")
	if first == "" {
		t.Fatalf("%s has no configuration after its header comment", prometheusConfigs[0])
	}
	var shown []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.HasPrefix(m[1], first+"\n") {
			shown = append(shown, m[1])
		}
	}
	switch {
	case len(shown) != 1:
		t.Fatalf("docs/install.md has %d yaml blocks starting with %q, want the one that shows %s", len(shown), first, prometheusConfigs[0])
	case shown[0] != body:
		t.Errorf("docs/install.md's Prometheus configuration is not %s (from its first line that is not a comment): copy it\ndocs:\n%s\nfile:\n%s", prometheusConfigs[0], shown[0], body)
	}
}

// withoutHeaderComment is text from its first line that is neither blank nor a comment.
func withoutHeaderComment(text string) string {
	for rest := text; rest != ""; {
		line, next, _ := strings.Cut(rest, "\n")
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			return rest
		}
		rest = next
	}
	return ""
}
