package argocd

import (
	"context"
	"fmt"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// healthKey is where Argo CD looks for a ClusterSet's health check in argocd-cm.
const healthKey = "resource.customizations.health.strait.io_ClusterSet"

// HealthScript is the ClusterSet health check of the argocd-cm ConfigMap in the file
// at path (the example's argocd-cm.yaml).
func HealthScript(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if cm.Name != "argocd-cm" || cm.Data[healthKey] == "" {
		return "", fmt.Errorf("%s: ConfigMap %q without %s", path, cm.Name, healthKey)
	}
	return cm.Data[healthKey], nil
}

// Health runs a health check as Argo CD does: a fresh interpreter with only the
// package, base and table libraries, a one-second limit, the object as the global table
// obj (decoded as Argo CD's cache holds it: integers as numbers), and the returned
// table's status and message, which must be one of Argo CD's health codes.
func Health(script string, obj map[string]any) (status, message string, err error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return "", "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return "", "", fmt.Errorf("the health check fails: %w", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the health check returns %s, want a table", l.Get(-1).Type())
	}
	status, message = lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
	switch status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
	default:
		return "", "", fmt.Errorf("status %q is none of Argo CD's health codes", status)
	}
	return status, message, nil
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
