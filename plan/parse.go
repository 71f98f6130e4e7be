package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Parse decodes one ClusterSet from YAML or JSON. Unknown fields, a wrong apiVersion or
// kind, and a document that is not a single ClusterSet are errors.
func Parse(data []byte) (*straitv1.ClusterSet, error) {
	docs := SplitYAML(data)
	if len(docs) != 1 {
		return nil, fmt.Errorf("want exactly one ClusterSet document, found %d", len(docs))
	}
	var cs straitv1.ClusterSet
	if err := yaml.UnmarshalStrict(docs[0], &cs); err != nil {
		return nil, fmt.Errorf("decoding ClusterSet: %w", err)
	}
	var errs field.ErrorList
	if cs.APIVersion != straitv1.GroupVersion.String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), cs.APIVersion, "must be "+straitv1.GroupVersion.String()))
	}
	if cs.Kind != straitv1.ClusterSetKind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), cs.Kind, "must be "+straitv1.ClusterSetKind))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &cs, nil
}

// SplitYAML splits a multi-document YAML stream at "---" lines into its documents,
// leaving out documents that hold only comments or blank lines.
func SplitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	content := false
	flush := func() {
		if content {
			docs = append(docs, cur)
		}
		cur, content = nil, false
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) || bytes.HasPrefix(t, []byte("---#")) {
			flush()
			continue
		}
		if len(t) > 0 && t[0] != '#' {
			content = true
		}
		cur = append(cur, line...)
	}
	flush()
	return docs
}

// ReadAll reads a stream fully, naming what it was reading on error.
func ReadAll(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(name + " is empty")
	}
	return data, nil
}
