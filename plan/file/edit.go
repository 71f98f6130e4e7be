package file

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// Change is one export or unexport of a service.
type Change struct {
	// Export: true adds, false removes.
	Export          bool
	Namespace, Name string
	// Clusters limits the change to these exporting clusters; empty means every cluster
	// (an export from every member that has the service, or the whole export removed).
	Clusters []string
}

// ParseService reads NAMESPACE/NAME, each a DNS label as a Service's namespace and name
// must be.
func ParseService(arg string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(arg, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("service %q: want NAMESPACE/NAME, as sample/whereami", arg)
	}
	for _, p := range []struct{ what, v string }{{"namespace", ns}, {"name", n}} {
		if errs := validation.IsDNS1123Label(p.v); len(errs) > 0 {
			return "", "", fmt.Errorf("service %q: %s %q: %s", arg, p.what, p.v, strings.Join(errs, "; "))
		}
	}
	return ns, n, nil
}

// Edit applies c to the ClusterSet file data and returns the new file. Only the export's
// entry changes: comments, order, quoting and indentation elsewhere stay as they were.
// The result must parse and validate as plan does for strait render; an error names the
// field, the value and what is wrong. A change that changes nothing is an error saying
// why (already exported, not exported).
func Edit(data []byte, c Change) ([]byte, error) {
	return editFile(data, func(doc *yaml.RNode, before *straitv1.ClusterSet) error {
		var clusters []string
		for _, cl := range before.Spec.Clusters {
			clusters = append(clusters, cl.Name)
		}
		for _, name := range c.Clusters {
			if !slices.Contains(clusters, name) {
				return fmt.Errorf("--clusters %s: no cluster %s in ClusterSet %s (it has %s)", name, name, before.Name, strings.Join(clusters, ", "))
			}
		}
		return edit(doc, c, clusters)
	})
}

// editFile runs change on the ClusterSet document of the file data, which must parse and
// validate before and after, and returns the new file; what change does not touch keeps
// its comments, order, quoting and indentation.
func editFile(data []byte, change func(doc *yaml.RNode, before *straitv1.ClusterSet) error) ([]byte, error) {
	before, err := plan.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("the file before the change: %w", err)
	}
	if errs := plan.Validate(before); len(errs) > 0 {
		return nil, fieldErrors("the file before the change (fix it first)", errs)
	}
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(data), PreserveSeqIndent: true}
	nodes, err := rw.Read()
	if err != nil {
		return nil, err
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("want one ClusterSet document, found %d", len(nodes))
	}
	if err := change(nodes[0], before); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	rw.Writer = &out
	if err := rw.Write(nodes); err != nil {
		return nil, err
	}
	result := keepCommentSpacing(data, out.Bytes())
	after, err := plan.Parse(result)
	if err != nil {
		return nil, fmt.Errorf("the file after the change: %w", err)
	}
	if errs := plan.Validate(after); len(errs) > 0 {
		return nil, fieldErrors("the file after the change", errs)
	}
	return result, nil
}

// beforeComment is the blanks before a line's trailing comment, which the YAML encoder
// writes as one space.
var beforeComment = regexp.MustCompile(`(\S)[ \t]{2,}#`)

// keepCommentSpacing gives the lines the encoder wrote with one space before a trailing
// comment their original spacing, where the original file has exactly one such line:
// the columns people align comments in stay aligned.
func keepCommentSpacing(orig, out []byte) []byte {
	byNormal := map[string]string{}
	seen := map[string]int{}
	for _, l := range strings.Split(string(orig), "\n") {
		if n := beforeComment.ReplaceAllString(l, "$1 #"); n != l {
			byNormal[n] = l
			seen[n]++
		}
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if o, ok := byNormal[l]; ok && seen[l] == 1 {
			lines[i] = o
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// fieldErrors is the validator's refusal, one field error a line, as strait render
// prints it.
func fieldErrors(what string, errs field.ErrorList) error {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, "  "+e.Error())
	}
	return fmt.Errorf("%s:\n%s", what, strings.Join(lines, "\n"))
}

// errNoChange says the file already is as asked.
var errNoChange = errors.New("no change")

// IsNoChange says err is an edit's "the file already is as asked".
func IsNoChange(err error) bool { return errors.Is(err, errNoChange) }

func edit(doc *yaml.RNode, c Change, all []string) error {
	svc := c.Namespace + "/" + c.Name
	exports, err := doc.Pipe(yaml.LookupCreate(yaml.SequenceNode, "spec", "exports"))
	if err != nil {
		return err
	}
	entries, err := exports.Elements()
	if err != nil {
		return err
	}
	idx := -1
	for i, e := range entries {
		if scalar(e, "namespace") == c.Namespace && scalar(e, "name") == c.Name {
			idx = i
			break
		}
	}
	if c.Export {
		if idx < 0 {
			return addEntry(exports, entries, c)
		}
		return widen(entries[idx], c, svc)
	}
	if idx < 0 {
		return fmt.Errorf("%s: %w: it is not exported (spec.exports has no namespace %s, name %s)", svc, errNoChange, c.Namespace, c.Name)
	}
	return narrow(doc, exports, entries[idx], c, all, svc)
}

func scalar(n *yaml.RNode, field string) string {
	f := n.Field(field)
	if f == nil || f.Value == nil {
		return ""
	}
	return f.Value.YNode().Value
}

// entryClusters is an entry's clusters, nil when it has none (every cluster exports).
func entryClusters(e *yaml.RNode) ([]string, *yaml.RNode) {
	f := e.Field("clusters")
	if f == nil || f.Value == nil {
		return nil, nil
	}
	var out []string
	for _, n := range f.Value.YNode().Content {
		out = append(out, n.Value)
	}
	return out, f.Value
}

// addEntry appends the export, its clusters in the style the file's other entries use
// (flow, as clusters: ["c2"], unless they use block sequences).
func addEntry(exports *yaml.RNode, entries []*yaml.RNode, c Change) error {
	entry := yaml.NewMapRNode(nil)
	if err := entry.PipeE(yaml.SetField("namespace", yaml.NewStringRNode(c.Namespace))); err != nil {
		return err
	}
	if err := entry.PipeE(yaml.SetField("name", yaml.NewStringRNode(c.Name))); err != nil {
		return err
	}
	if len(c.Clusters) > 0 {
		entry.YNode().Content = append(entry.YNode().Content, yaml.NewStringRNode("clusters").YNode(), clusterSeq(c.Clusters, entries))
	}
	return exports.PipeE(yaml.Append(entry.YNode()))
}

// clusterSeq is a sequence of cluster names styled as the file's other clusters lists.
func clusterSeq(names []string, entries []*yaml.RNode) *yaml.Node {
	style, quote := yaml.FlowStyle, yaml.DoubleQuotedStyle
	for _, e := range entries {
		if _, seq := entryClusters(e); seq != nil {
			style = seq.YNode().Style
			if len(seq.YNode().Content) > 0 {
				quote = seq.YNode().Content[0].Style
			}
			break
		}
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Style: style}
	for _, n := range names {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: n, Style: quote})
	}
	return seq
}

// widen exports from more clusters: those given join the entry's list, or, without
// --clusters, the list goes and every cluster exports.
func widen(entry *yaml.RNode, c Change, svc string) error {
	have, seq := entryClusters(entry)
	if seq == nil {
		return fmt.Errorf("%s: %w: it is exported from every cluster already", svc, errNoChange)
	}
	if len(c.Clusters) == 0 {
		return entry.PipeE(yaml.Clear("clusters"))
	}
	added := false
	for _, name := range c.Clusters {
		if !slices.Contains(have, name) {
			style := yaml.DoubleQuotedStyle
			if len(seq.YNode().Content) > 0 {
				style = seq.YNode().Content[0].Style
			}
			seq.YNode().Content = append(seq.YNode().Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: name, Style: style})
			added = true
		}
	}
	if !added {
		return fmt.Errorf("%s: %w: it is exported from %s already", svc, errNoChange, strings.Join(c.Clusters, ", "))
	}
	return nil
}

// narrow stops exporting from the clusters given, or, without --clusters, removes the
// export. An entry of every cluster becomes the list of all the others; an entry left
// with no cluster goes.
func narrow(doc, exports, entry *yaml.RNode, c Change, all []string, svc string) error {
	if len(c.Clusters) == 0 {
		return removeEntry(doc, exports, entry)
	}
	have, seq := entryClusters(entry)
	if seq == nil {
		have = all
	}
	var keep []string
	for _, name := range have {
		if !slices.Contains(c.Clusters, name) {
			keep = append(keep, name)
		}
	}
	if len(keep) == len(have) {
		return fmt.Errorf("%s: %w: it is not exported from %s", svc, errNoChange, strings.Join(c.Clusters, ", "))
	}
	if len(keep) == 0 {
		return removeEntry(doc, exports, entry)
	}
	if seq == nil {
		entries, _ := exports.Elements()
		entry.YNode().Content = append(entry.YNode().Content, yaml.NewStringRNode("clusters").YNode(), clusterSeq(keep, entries))
		return nil
	}
	var content []*yaml.Node
	for _, n := range seq.YNode().Content {
		if slices.Contains(keep, n.Value) {
			content = append(content, n)
		}
	}
	seq.YNode().Content = content
	return nil
}

// removeEntry takes the entry out; with none left, spec.exports goes too (an empty list
// the schema would take, but the file reads better without it).
func removeEntry(doc, exports, entry *yaml.RNode) error {
	var content []*yaml.Node
	for _, n := range exports.YNode().Content {
		if n != entry.YNode() {
			content = append(content, n)
		}
	}
	exports.YNode().Content = content
	if len(content) > 0 {
		return nil
	}
	return doc.PipeE(yaml.Lookup("spec"), yaml.Clear("exports"))
}
