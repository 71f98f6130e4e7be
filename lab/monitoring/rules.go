package monitoring

import (
	"fmt"
	"regexp"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// LabScale is how much faster the lab's alerts fire than the rules say: every `for:`
// and every range of an expression is divided by it (1m becomes 5s, a [5m] window
// [25s]), with the lab's 1 s scrape and evaluation intervals in place of 15 s. The
// alerts are the same otherwise: what fires on a fault in the lab fires on it in a
// cluster, LabScale times later.
const LabScale = 12

// rangeSelector is a range in an expression, "[5m]", or a subquery's "[30m:1m]".
var rangeSelector = regexp.MustCompile(`\[([0-9]+[smhdwy])(:[0-9]+[smhdwy])?\]`)

// ShortenRules is a rule file with every alert's `for:` and every range in an
// expression divided by scale, none shorter than a second.
func ShortenRules(rules []byte, scale int) ([]byte, error) {
	if scale < 1 {
		return nil, fmt.Errorf("scale %d: want 1 or more", scale)
	}
	var file struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.Unmarshal(rules, &file); err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	if len(file.Groups) == 0 {
		return nil, fmt.Errorf("rule file: no groups")
	}
	for g, group := range file.Groups {
		rules, _ := group["rules"].([]any)
		for i, r := range rules {
			rule, ok := r.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("groups[%d].rules[%d] is not a mapping", g, i)
			}
			if f, ok := rule["for"].(string); ok {
				d, err := shorten(f, scale)
				if err != nil {
					return nil, fmt.Errorf("groups[%d].rules[%d] (%v).for: %w", g, i, rule["alert"], err)
				}
				rule["for"] = d
			}
			expr, _ := rule["expr"].(string)
			var failed error
			rule["expr"] = rangeSelector.ReplaceAllStringFunc(expr, func(s string) string {
				m := rangeSelector.FindStringSubmatch(s)
				d, err := shorten(m[1], scale)
				if err != nil {
					failed = err
					return s
				}
				if m[2] == "" {
					return "[" + d + "]"
				}
				step, err := shorten(m[2][1:], scale)
				if err != nil {
					failed = err
					return s
				}
				return "[" + d + ":" + step + "]"
			})
			if failed != nil {
				return nil, fmt.Errorf("groups[%d].rules[%d] (%v).expr: %w", g, i, rule["alert"], failed)
			}
		}
	}
	return yaml.Marshal(file)
}

// shorten is a Prometheus duration divided by scale, in whole seconds, at least 1s.
func shorten(s string, scale int) (string, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return "", err
	}
	short := max(time.Duration(d)/time.Duration(scale), time.Second).Truncate(time.Second)
	return model.Duration(short).String(), nil
}
