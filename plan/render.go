package plan

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Format of rendered objects.
type Format string

// Formats.
const (
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// Render serializes the objects of the given members (all when clusters is empty) for
// `kubectl diff -f -` and `kubectl apply --server-side -f -`: YAML documents separated by
// "---", or one JSON List. Keys are sorted and empty fields left out, so the same plan
// always renders to the same bytes.
func Render(p *Plan, clusters []string, format Format) ([]byte, error) {
	if len(clusters) == 0 {
		clusters = p.Clusters()
	}
	var items []map[string]any
	for _, c := range clusters {
		if p.byName[c] == nil {
			return nil, fmt.Errorf("cluster %q is not in the ClusterSet (clusters: %v)", c, p.Clusters())
		}
		for _, o := range p.Objects(c) {
			m, err := toMap(o)
			if err != nil {
				return nil, err
			}
			items = append(items, m)
		}
	}
	switch format {
	case FormatJSON:
		out, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		return append(out, '\n'), err
	case FormatYAML, "":
		var buf bytes.Buffer
		for i, m := range items {
			if i > 0 {
				buf.WriteString("---\n")
			}
			y, err := yaml.Marshal(m)
			if err != nil {
				return nil, err
			}
			buf.Write(y)
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("unknown output format %q: want yaml or json", format)
}

// toMap turns an object into a map without the fields an apply must not carry: a null
// creationTimestamp, an empty status and a condition's null lastTransitionTime.
func toMap(o client.Object) (map[string]any, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encoding %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && emptyMap(st) {
		delete(m, "status")
	}
	// The hub stamps a condition's lastTransitionTime when it writes it; the plan has none.
	if st, ok := m["status"].(map[string]any); ok {
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["lastTransitionTime"] == nil {
				delete(cm, "lastTransitionTime")
			}
		}
	}
	return m, nil
}

// emptyMap says whether m holds nothing but empty maps: a Service's status is
// {loadBalancer: {}} before anything has written it.
func emptyMap(m map[string]any) bool {
	for _, v := range m {
		if sub, ok := v.(map[string]any); !ok || !emptyMap(sub) {
			return false
		}
	}
	return true
}
