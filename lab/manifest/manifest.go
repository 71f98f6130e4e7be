package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Decode reads the objects of a multi-document YAML, skipping empty documents; through
// JSON, so that numbers are int64 as unstructured holds them. An object without a kind
// or a name is an error.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" || string(t) == "{}" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("object %d: %w", len(objs)+1, err)
		}
		if o.GetName() == "" {
			return nil, fmt.Errorf("object %d: a %s without a name", len(objs)+1, o.GetKind())
		}
		objs = append(objs, o)
	}
}

// Encode is objs as one multi-document YAML, in their order.
func Encode(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}
