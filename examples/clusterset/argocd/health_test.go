package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// healthScript is the Lua of the example's argocd-cm ConfigMap.
func healthScript(t *testing.T) string {
	t.Helper()
	script, err := HealthScript("argocd-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// health runs the check as Argo CD does (Health).
func health(t *testing.T, script string, obj *unstructured.Unstructured) (status, message string) {
	t.Helper()
	status, message, err := Health(script, obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	return status, message
}

func loadStatus(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatalf("%v (make it with: go test -run TestGenerateStatuses -update)", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// Each state the hub really wrote gets the health an operator expects, with the hub's
// own words in the message.
func TestClusterSetHealthOfRealStatuses(t *testing.T) {
	script := healthScript(t)
	for _, c := range []struct {
		state, want string
		message     []string
	}{
		{"ready", "Healthy", []string{"2 clusters and 0 exports in place"}},
		{"member-unreachable", "Degraded", []string{"MembersUnreachable", "unreachable: c2"}},
		{"stalled", "Degraded", []string{"Stalled", "spec.clusters[1].podCIDRs[0]", "overlap"}},
		{"not-observed", "Progressing", []string{"generation 2", "observed: 1"}},
		{"suspended", "Suspended", []string{"spec.suspend"}},
		{"new", "Progressing", []string{"Waiting for the Strait hub"}},
	} {
		t.Run(c.state, func(t *testing.T) {
			status, msg := health(t, script, loadStatus(t, c.state))
			if status != c.want {
				t.Errorf("health %s (%q), want %s", status, msg, c.want)
			}
			for _, w := range c.message {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// The check decides by the conditions, not by their order or by extra ones, and a
// stale Stalled of an older generation does not hide a new generation being worked on.
func TestClusterSetHealthReadsConditionsByType(t *testing.T) {
	script := healthScript(t)
	u := loadStatus(t, "member-unreachable")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	reversed := append([]any{map[string]any{"type": "SomethingElse", "status": "False", "reason": "X"}}, conds...)
	for i, j := 1, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	if err := unstructured.SetNestedSlice(u.Object, reversed, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if status, _ := health(t, script, u); status != "Degraded" {
		t.Errorf("reordered conditions: %s, want Degraded", status)
	}
	stalled := loadStatus(t, "stalled")
	stalled.SetGeneration(stalled.GetGeneration() + 1)
	if status, _ := health(t, script, stalled); status != "Progressing" {
		t.Errorf("a fixed spec not yet observed after a stall: %s, want Progressing", status)
	}
}
