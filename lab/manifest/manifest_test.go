package manifest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestEncodeReadsBackAsDecoded(t *testing.T) {
	in := "# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\nspec:\n  replicas: 2\n"
	objs, err := Decode([]byte(in))
	if err != nil || len(objs) != 2 {
		t.Fatalf("Decode: %d objects, %v; want 2 (empty documents skipped)", len(objs), err)
	}
	if n, ok, _ := unstructured.NestedInt64(objs[1].Object, "spec", "replicas"); !ok || n != 2 {
		t.Errorf("replicas %v, want int64 2", objs[1].Object["spec"])
	}
	out, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(out)
	if err != nil || len(back) != 2 || back[0].GetName() != "a" || back[1].GetKind() != "Deployment" {
		t.Fatalf("Encode then Decode: %d objects, %v", len(back), err)
	}
}

func TestAnObjectWithoutKindOrNameIsRefused(t *testing.T) {
	for _, in := range []string{"apiVersion: v1\nmetadata:\n  name: a\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), "object 1") {
			t.Errorf("Decode(%q): %v, want an error naming object 1", in, err)
		}
	}
}
