package monitoring

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestShortenRulesDividesForAndRanges(t *testing.T) {
	in := []byte(`groups:
- name: g
  rules:
  - alert: A
    expr: sum by (cluster) (increase(x_total[5m])) > 0 and rate(y[30m:1m]) > 1
    for: 1m
    labels: {severity: info}
  - alert: B
    expr: up == 0
    for: 10s
  - alert: C
    expr: absent(up)
  - record: r
    expr: rate(z[2h])
`)
	out, err := ShortenRules(in, 12)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	r := f.Groups[0].Rules
	want := []struct{ expr, forDur string }{
		{"sum by (cluster) (increase(x_total[25s])) > 0 and rate(y[2m30s:5s]) > 1", "5s"},
		{"up == 0", "1s"}, // never under a second
		{"absent(up)", ""},
		{"rate(z[10m])", ""},
	}
	for i, w := range want {
		if got := r[i]["expr"]; got != w.expr {
			t.Errorf("rule %d expr = %q, want %q", i, got, w.expr)
		}
		got, _ := r[i]["for"].(string)
		if got != w.forDur {
			t.Errorf("rule %d for = %q, want %q", i, got, w.forDur)
		}
	}
	if r[0]["labels"].(map[string]any)["severity"] != "info" {
		t.Errorf("labels lost: %v", r[0])
	}
}

func TestShortenRulesRefusesWhatItCannotRead(t *testing.T) {
	for name, in := range map[string]string{
		"no groups":    "foo: bar\n",
		"bad for":      "groups: [{name: g, rules: [{alert: A, expr: up, for: soon}]}]\n",
		"not yaml":     "groups: [\n",
		"rule scalars": "groups: [{name: g, rules: [up]}]\n",
	} {
		if _, err := ShortenRules([]byte(in), 12); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ShortenRules([]byte("groups: [{name: g, rules: []}]\n"), 0); err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("scale 0: %v", err)
	}
}
