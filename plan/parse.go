package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Parse decodes one ClusterSet from YAML or JSON the way the API server does with
// kubectl's strict field validation: field names are case-sensitive, and unknown or
// repeated fields, a wrong apiVersion or kind, a required field left out, and a
// document that is not a single ClusterSet are errors. Field errors come back as a
// field.ErrorList aggregate, one error per field.
func Parse(data []byte) (*straitv1.ClusterSet, error) {
	docs := SplitYAML(data)
	if len(docs) != 1 {
		return nil, fmt.Errorf("want exactly one ClusterSet document, found %d", len(docs))
	}
	js, err := yaml.YAMLToJSONStrict(docs[0])
	if err != nil {
		return nil, fmt.Errorf("decoding ClusterSet: %w", err)
	}
	var cs straitv1.ClusterSet
	strictErrs, err := kjson.UnmarshalStrict(js, &cs)
	if err != nil {
		return nil, fmt.Errorf("decoding ClusterSet: %w", err)
	}
	var errs field.ErrorList
	for _, e := range strictErrs {
		errs = append(errs, strictError(e))
	}
	if cs.APIVersion != straitv1.GroupVersion.String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), cs.APIVersion, "must be "+straitv1.GroupVersion.String()))
	}
	if cs.Kind != straitv1.ClusterSetKind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), cs.Kind, "must be "+straitv1.ClusterSetKind))
	}
	errs = append(errs, unsetLooking(js)...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &cs, nil
}

// strictError turns an unknown or repeated field into a field error at its path.
func strictError(e error) *field.Error {
	var fe kjson.FieldError
	if !errors.As(e, &fe) {
		return field.InternalError(field.NewPath("spec"), e)
	}
	path := field.NewPath(fe.FieldPath())
	if bytes.HasPrefix([]byte(e.Error()), []byte("duplicate field")) {
		return field.Forbidden(path, "given twice; keep one")
	}
	return field.Forbidden(path, "unknown field: check its spelling (names are case-sensitive) and indentation; `kubectl explain clusterset.spec` lists the fields")
}

// maxIntervalLength is the schema's maxLength of spec.interval, which the decoded
// duration no longer shows.
const maxIntervalLength = 64

// unsetLooking finds what the Go types lose once decoded: a required boolean left out,
// zero values the API server refuses (below the minimum, outside the enum, not a CIDR)
// but which decoding would take for "not set" and default, and the interval's length.
func unsetLooking(js []byte) field.ErrorList {
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil
	}
	spec, _ := doc["spec"].(map[string]any)
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if g, ok := spec["globalnet"].(map[string]any); ok {
		if _, set := g["enabled"]; !set {
			errs = append(errs, field.Required(specPath.Child("globalnet", "enabled"), "say whether globalnet is on: enabled: true or enabled: false"))
		}
	}
	if iv, ok := spec["interval"].(string); ok && len(iv) > maxIntervalLength {
		errs = append(errs, field.TooLong(specPath.Child("interval"), iv, maxIntervalLength))
	}
	zeros := []struct {
		path []string
		what string
	}{
		{[]string{"cable", "driver"}, "leave the field out for the default, wireguard"},
		{[]string{"cable", "port"}, "not a UDP port; leave the field out for the driver's default port"},
		{[]string{"globalnet", "cidrRange"}, "not a CIDR; leave the field out for the default, " + straitv1.DefaultGlobalCIDRRange},
		{[]string{"globalnet", "clusterSize"}, "a cluster needs at least 4 global addresses; leave the field out for the default, 65536"},
		{[]string{"globalnet", "clusterEgressIPs"}, "a cluster needs at least 1 egress IP; leave the field out for the default, 8"},
		{[]string{"exportPolicy"}, "must be Declared or MemberExports; leave the field out for the default, Declared"},
	}
	for _, z := range zeros {
		v, ok := lookup(spec, z.path...)
		if ok && (v == "" || v == float64(0)) {
			errs = append(errs, field.Invalid(specPath.Child(z.path[0], z.path[1:]...), v, z.what))
		}
	}
	return errs
}

// lookup walks nested JSON objects.
func lookup(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
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
