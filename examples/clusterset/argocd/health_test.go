package argocd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// healthKey is where Argo CD looks for a ClusterSet's health check in argocd-cm.
const healthKey = "resource.customizations.health.strait.io_ClusterSet"

// healthScript is the Lua of the example's argocd-cm ConfigMap.
func healthScript(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("argocd-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("argocd-cm.yaml: %v", err)
	}
	if cm.Name != "argocd-cm" || cm.Data[healthKey] == "" {
		t.Fatalf("argocd-cm.yaml: ConfigMap %q without %s", cm.Name, healthKey)
	}
	return cm.Data[healthKey]
}

// health runs a health check as Argo CD does: a fresh interpreter with only the
// package, base and table libraries, a one-second limit, the object as the global table
// obj (decoded as Argo CD's cache holds it: integers as numbers), and the returned
// table's status and message.
func health(t *testing.T, script string, obj *unstructured.Unstructured) (status, message string) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj.Object))
	if err := l.DoString(script); err != nil {
		t.Fatalf("the health check fails: %v", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returns %s, want a table", l.Get(-1).Type())
	}
	status, message = lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
	switch status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
	default:
		t.Fatalf("status %q is none of Argo CD's health codes", status)
	}
	return status, message
}

func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetH(lua.LString(k), toLua(l, e))
		}
		return t
	}
	return lua.LNil
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
