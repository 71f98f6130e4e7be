package file

import (
	"fmt"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Member is a cluster entry of spec.clusters, as strait join writes it.
type Member struct {
	Name string
	// SecretName is the hub's kubeconfig Secret (kubeConfig.secretRef.name); its key is
	// the default, value.
	SecretName   string
	PodCIDRs     []string
	ServiceCIDRs []string
}

// AddCluster appends m to spec.clusters of the ClusterSet file data, styled as the
// entries before it (flow or block lists, their quotes), and returns the new file,
// validated as strait render validates it. A cluster of that name already there is an
// error naming it: its entry is the person's, not join's, to change.
func AddCluster(data []byte, m Member) ([]byte, error) {
	return editFile(data, func(doc *yaml.RNode, before *straitv1.ClusterSet) error {
		for _, c := range before.Spec.Clusters {
			if c.Name == m.Name {
				return fmt.Errorf("%s: %w: spec.clusters has a cluster %s already (change its entry by hand, or strait unjoin it first)", m.Name, errNoChange, m.Name)
			}
		}
		clusters, err := doc.Pipe(yaml.LookupCreate(yaml.SequenceNode, "spec", "clusters"))
		if err != nil {
			return err
		}
		entries, err := clusters.Elements()
		if err != nil {
			return err
		}
		var like *yaml.RNode
		if len(entries) > 0 {
			like = entries[len(entries)-1]
		}
		entry := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		add := func(key string, v *yaml.Node) {
			entry.Content = append(entry.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: key}, v)
		}
		add("name", &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: m.Name})
		if m.SecretName != "" {
			ref := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: "name"},
				{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: m.SecretName}}}
			kc := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: "secretRef"}, ref}}
			if style := fieldStyle(like, "kubeConfig"); style != 0 {
				kc.Style, ref.Style = style, style
			}
			add("kubeConfig", kc)
		}
		add("podCIDRs", stringSeq(m.PodCIDRs, like, "podCIDRs"))
		add("serviceCIDRs", stringSeq(m.ServiceCIDRs, like, "serviceCIDRs"))
		return clusters.PipeE(yaml.Append(entry))
	})
}

// RemoveCluster takes the cluster's entry out of spec.clusters, and the cluster out of
// every export that names it (an export left with no cluster goes), and returns the new
// file, validated.
func RemoveCluster(data []byte, name string) ([]byte, error) {
	return editFile(data, func(doc *yaml.RNode, before *straitv1.ClusterSet) error {
		var names []string
		for _, c := range before.Spec.Clusters {
			names = append(names, c.Name)
		}
		if !slices.Contains(names, name) {
			return fmt.Errorf("%s: %w: spec.clusters has no cluster %s", name, errNoChange, name)
		}
		clusters, err := doc.Pipe(yaml.Lookup("spec", "clusters"))
		if err != nil {
			return err
		}
		var keep []*yaml.Node
		for _, e := range clusters.YNode().Content {
			if scalar(yaml.NewRNode(e), "name") != name {
				keep = append(keep, e)
			}
		}
		clusters.YNode().Content = keep
		exports, err := doc.Pipe(yaml.Lookup("spec", "exports"))
		if err != nil || exports == nil {
			return err
		}
		entries, err := exports.Elements()
		if err != nil {
			return err
		}
		for _, e := range entries {
			have, seq := entryClusters(e)
			if seq == nil || !slices.Contains(have, name) {
				continue
			}
			if len(have) == 1 {
				if err := removeEntry(doc, exports, e); err != nil {
					return err
				}
				continue
			}
			var content []*yaml.Node
			for _, n := range seq.YNode().Content {
				if n.Value != name {
					content = append(content, n)
				}
			}
			seq.YNode().Content = content
		}
		return nil
	})
}

// fieldStyle is the style of a field's value in entry (0 when either is missing).
func fieldStyle(entry *yaml.RNode, field string) yaml.Style {
	if entry == nil {
		return 0
	}
	f := entry.Field(field)
	if f == nil || f.Value == nil {
		return 0
	}
	return f.Value.YNode().Style
}

// stringSeq is a list of strings styled as the same field of entry (flow, double-quoted
// when there is none to follow).
func stringSeq(values []string, entry *yaml.RNode, field string) *yaml.Node {
	style, quote := yaml.FlowStyle, yaml.DoubleQuotedStyle
	if entry != nil {
		if f := entry.Field(field); f != nil && f.Value != nil {
			style = f.Value.YNode().Style
			if c := f.Value.YNode().Content; len(c) > 0 {
				quote = c[0].Style
			}
		}
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Style: style}
	for _, v := range values {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: v, Style: quote})
	}
	return seq
}
