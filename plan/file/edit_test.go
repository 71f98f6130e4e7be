package file

import (
	"os"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/udiff"
)

// basic is the basic example as a user keeps it, with comments in and around the
// exports (testdata/basic.yaml; cmd/strait/export's tests edit it too).
var basic = readFile("testdata/basic.yaml")

// diffOf is what strait export prints for the change, without its headers.
func diffOf(t *testing.T, before string, c Change) string {
	t.Helper()
	after, err := Edit([]byte(before), c)
	if err != nil {
		t.Fatal(err)
	}
	d := udiff.Unified("a", "b", before, string(after))
	_, body, _ := strings.Cut(d, "+++ b\n")
	return body
}

// Each change touches its entry's lines alone: every comment, quote and indent elsewhere
// stays as it was.
func TestEditChangesTheExportsLinesAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Change
		want string
	}{
		{"a new export from c2 and c3", Change{Export: true, Namespace: "shop", Name: "cart", Clusters: []string{"c2", "c3"}}, `@@ -25,3 +25,6 @@
       clusters: ["c2"]
     - namespace: sample
       name: everywhere
+    - namespace: shop
+      name: cart
+      clusters: ["c2", "c3"]
`},
		{"one more cluster", Change{Export: true, Namespace: "sample", Name: "whereami-cs", Clusters: []string{"c3"}}, `@@ -22,6 +22,6 @@
     # The ClusterSetIP one.
     - namespace: sample
       name: whereami-cs
-      clusters: ["c2"]
+      clusters: ["c2", "c3"]
     - namespace: sample
       name: everywhere
`},
		{"from every cluster", Change{Export: true, Namespace: "sample", Name: "whereami-cs"}, `@@ -22,6 +22,5 @@
     # The ClusterSetIP one.
     - namespace: sample
       name: whereami-cs
-      clusters: ["c2"]
     - namespace: sample
       name: everywhere
`},
		{"unexported", Change{Namespace: "sample", Name: "whereami-cs"}, `@@ -19,9 +19,5 @@
     driver: wireguard
   # Exported services.
   exports:
-    # The ClusterSetIP one.
-    - namespace: sample
-      name: whereami-cs
-      clusters: ["c2"]
     - namespace: sample
       name: everywhere
`},
		{"unexported from one of every cluster", Change{Namespace: "sample", Name: "everywhere", Clusters: []string{"c1"}}, `@@ -25,3 +25,4 @@
       clusters: ["c2"]
     - namespace: sample
       name: everywhere
+      clusters: ["c2", "c3"]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := diffOf(t, basic, tc.c); got != tc.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// The last export going takes spec.exports with it; the comment above it stays.
func TestUnexportingTheLastOneRemovesTheList(t *testing.T) {
	after, err := Edit([]byte(basic), Change{Namespace: "sample", Name: "whereami-cs"})
	if err != nil {
		t.Fatal(err)
	}
	after, err = Edit(after, Change{Namespace: "sample", Name: "everywhere"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(after), "exports:") || !strings.Contains(string(after), "# Two clusters with disjoint CIDRs.") {
		t.Errorf("after both unexports:\n%s", after)
	}
}

// The repository's own examples survive an export and its undoing byte for byte.
func TestExportThenUnexportGivesTheFileBack(t *testing.T) {
	for _, f := range []string{"basic", "globalnet", "three-clusters"} {
		path := "../../examples/clusterset/" + f + "/clusterset.yaml"
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		after, err := Edit(data, Change{Export: true, Namespace: "roundtrip", Name: "svc"})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		back, err := Edit(after, Change{Namespace: "roundtrip", Name: "svc"})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(back) != string(data) {
			t.Errorf("%s: export and unexport changed the file:\n%s", path, udiff.Unified("before", "after", string(data), string(back)))
		}
	}
}

// Bad input is refused naming the argument or the field, the value and what is wrong;
// a change that changes nothing says why.
func TestBadInputIsRefusedNamingFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		data string
		arg  string
		c    Change
		want string
	}{
		{arg: "whereami", want: `service "whereami": want NAMESPACE/NAME, as sample/whereami`},
		{arg: "Sample/whereami", want: `service "Sample/whereami": namespace "Sample": a lowercase RFC 1123 label`},
		{arg: "sample/where.ami", want: `service "sample/where.ami": name "where.ami": must not contain dots`},
		{data: basic, c: Change{Export: true, Namespace: "shop", Name: "cart", Clusters: []string{"c9"}},
			want: "--clusters c9: no cluster c9 in ClusterSet demo (it has c1, c2, c3)"},
		{data: basic, c: Change{Export: true, Namespace: "sample", Name: "everywhere"},
			want: "sample/everywhere: no change: it is exported from every cluster already"},
		{data: basic, c: Change{Export: true, Namespace: "sample", Name: "whereami-cs", Clusters: []string{"c2"}},
			want: "sample/whereami-cs: no change: it is exported from c2 already"},
		{data: basic, c: Change{Namespace: "shop", Name: "cart"},
			want: "shop/cart: no change: it is not exported (spec.exports has no namespace shop, name cart)"},
		{data: strings.Replace(basic, `"10.9.0.0/16"`, `"10.8.0.0/16"`, 1), c: Change{Export: true, Namespace: "shop", Name: "cart"},
			want: "the file before the change (fix it first):\n  spec.clusters[1].podCIDRs[0]: Invalid value: \"10.8.0.0/16\": clusters c1 and c2 overlap"},
		// A change the validator refuses (ParseService would refuse this name first; the
		// validator is the last word on the file).
		{data: basic, c: Change{Export: true, Namespace: "shop", Name: strings.Repeat("x", 64)},
			want: "the file after the change:\n  spec.exports[2].name: Invalid value"},
		{data: strings.Replace(basic, "driver: wireguard", "driver: gre", 1), c: Change{Export: true, Namespace: "shop", Name: "cart"},
			want: `spec.cable.driver: Unsupported value: "gre"`},
	} {
		var err error
		if tc.arg != "" {
			_, _, err = ParseService(tc.arg)
		} else {
			_, err = Edit([]byte(tc.data), tc.c)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tc.c, err, tc.want)
		}
	}
}

// readFile is a test file's content; a package whose fixture is missing cannot run.
func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}
