package rbacaudit

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// testdata/envtest-audit.log was written by a kube-apiserver with the lab's audit policy
// while an administrator made the ServiceAccount strait-agent a Role (testdata/roles.yaml),
// and the ServiceAccount, with its own token, listed and watched the Lease strait-gateway
// by name, got a missing ConfigMap, listed Secrets (forbidden), asked for a token and
// the version; then the administrator deleted the RoleBinding, the ServiceAccount got
// the ConfigMap again (forbidden), and the administrator restored the binding.
const agent = "system:serviceaccount:strait-system:strait-agent"

func readTestdata(t *testing.T) *Usage {
	t.Helper()
	u, err := ReadFile(filepath.Join("testdata", "envtest-audit.log"), "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func usedLines(u *Usage) map[string]int {
	out := map[string]int{}
	for _, use := range u.Used {
		out[use.User+" "+use.Access.String()] = use.Count
	}
	return out
}

func TestReadCountsEveryAuthorizedResourceRequestOnce(t *testing.T) {
	got := usedLines(readTestdata(t))
	want := map[string]int{
		agent + " list leases.coordination.k8s.io strait-gateway -n strait-system": 1,
		// Logged when it started and when it ended: one request.
		agent + " watch leases.coordination.k8s.io strait-gateway -n strait-system": 1,
		// Not found, twice: the grant was used all the same.
		agent + " get configmaps missing -n strait-system":                    2,
		agent + " create serviceaccounts/token strait-agent -n strait-system": 1,
	}
	// Not there: /version (no resource), the administrator's writes (not a
	// ServiceAccount), the refused list of Secrets.
	if len(got) != len(want) {
		t.Errorf("uses:\n%v\nwant:\n%v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d uses, want %d", k, got[k], n)
		}
	}
}

func TestReadTellsARefusalWhileTheRolesWereGoneFromOne(t *testing.T) {
	u := readTestdata(t)
	if len(u.Refused) != 2 {
		t.Fatalf("refusals %v, want the Secrets list and the ConfigMap get", u.Refused)
	}
	fail := u.Refusals(func(string) bool { return true })
	if len(fail) != 1 || fail[0].Access.String() != "list secrets -n strait-system" || !fail[0].ByRBAC {
		t.Errorf("failing refusals %v, want only the Secrets list, by RBAC", fail)
	}
	if !strings.Contains(fail[0].Reason, "cannot list resource") || fail[0].Cluster != "c1" {
		t.Errorf("refusal %+v: want the cluster and what was refused", fail[0])
	}
	for _, r := range u.Refused {
		if r.Access.Resource == "configmaps" && r.Excused != ExcusedRolesChanging {
			t.Errorf("%s: made after the RoleBinding was deleted, before it was restored; not a fault of the role", r)
		}
	}
}

// An event the policy does not record, made here from a recorded one: an administrator
// acting as the agent (kubectl auth can-i --as, a test) is not the agent.
func TestReadLeavesOutImpersonatedRequests(t *testing.T) {
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","verb":"get",` +
		`"user":{"username":"kubernetes-admin"},"impersonatedUser":{"username":"` + agent + `"},` +
		`"objectRef":{"resource":"secrets","namespace":"strait-system","name":"x","apiVersion":"v1"},"responseStatus":{"code":403},` +
		`"requestReceivedTimestamp":"2026-11-26T08:10:31.652050Z","stageTimestamp":"2026-11-26T08:10:31.652050Z",` +
		`"annotations":{"authorization.k8s.io/decision":"forbid"}}`
	line2 := strings.Replace(strings.Replace(line, `"user":{"username":"kubernetes-admin"},"impersonatedUser":{"username":"`+agent+`"}`,
		`"user":{"username":"`+agent+`"}`, 1), `"auditID":"1"`, `"auditID":"2"`, 1)
	u, err := Read(strings.NewReader(line+"\n"+line2+"\n"), "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Refused) != 1 || u.Refused[0].User != agent {
		t.Errorf("refusals %v, want only the agent's own", u.Refused)
	}
}

// A 403 the authorizer allowed came from admission (a webhook, a ValidatingAdmissionPolicy):
// the grant was used, and the refusal fails only for the identities under test.
func TestAnAdmissionRefusalIsAUse(t *testing.T) {
	line := `{"auditID":"3","stage":"ResponseComplete","verb":"create","user":{"username":"system:serviceaccount:flux-system:kustomize-controller"},` +
		`"objectRef":{"resource":"clustersets","namespace":"strait-system","name":"bad","apiGroup":"strait.io"},` +
		`"responseStatus":{"code":403,"message":"admission webhook \"clustersets.strait.io\" denied the request"},` +
		`"requestReceivedTimestamp":"2026-11-26T08:10:31.652050Z","annotations":{"authorization.k8s.io/decision":"allow"}}`
	u, err := Read(strings.NewReader(line), "hub", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Used) != 1 || len(u.Refused) != 1 || u.Refused[0].ByRBAC {
		t.Fatalf("uses %v refusals %v: want one use and one refusal by admission", u.Used, u.Refused)
	}
	if n := len(u.Refusals(func(string) bool { return false })); n != 0 {
		t.Errorf("%d failing refusals of an identity not under test", n)
	}
	if n := len(u.Refusals(func(string) bool { return true })); n != 1 {
		t.Errorf("%d failing refusals of an identity under test, want 1", n)
	}
}

func TestReadNamesTheLineItCannotRead(t *testing.T) {
	_, err := Read(strings.NewReader("{}\n{not json\n"), "c2", nil)
	if err == nil || !strings.Contains(err.Error(), "c2 audit log line 2") {
		t.Errorf("err = %v, want the cluster and the line", err)
	}
}

func loadRoles(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func grantLines(gs []Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.User+" "+g.String())
	}
	return out
}

func TestGrantsExpandEveryBoundRule(t *testing.T) {
	gs, err := Grants(loadRoles(t, "roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		agent + " create serviceaccounts/token -n strait-system",
		agent + " get configmaps -n strait-system",
		agent + " get leases.coordination.k8s.io strait-gateway -n strait-system",
		agent + " list leases.coordination.k8s.io strait-gateway -n strait-system",
		agent + " list nodes -A",
		agent + " update leases.coordination.k8s.io strait-gateway -n strait-system",
		agent + " watch leases.coordination.k8s.io strait-gateway -n strait-system",
	}
	if got := grantLines(gs); !slices.Equal(got, want) {
		t.Errorf("grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGrantsRefuseWhatTheCheckCannotReadExactly(t *testing.T) {
	objs := loadRoles(t, "roles.yaml")
	_ = unstructured.SetNestedField(objs[0].Object, []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"*"}, "verbs": []any{"get"}}}, "rules")
	_ = unstructured.SetNestedField(objs[3].Object, []any{map[string]any{"kind": "Group", "name": "system:authenticated"}}, "subjects")
	_, err := Grants(objs)
	if err == nil || !strings.Contains(err.Error(), "wildcard") || !strings.Contains(err.Error(), "Group system:authenticated") {
		t.Errorf("err = %v, want the wildcard and the Group subject named", err)
	}
}

func TestCheckFindsUnusedGrantsAndRefusals(t *testing.T) {
	gs, err := Grants(loadRoles(t, "roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := readTestdata(t)
	r := Check(u, gs, []Allowance{{User: agent, Grant: "update leases.coordination.k8s.io strait-gateway -n strait-system", Why: "only the holder renews"}})
	if got := grantLines(r.Unused); !slices.Equal(got, []string{
		agent + " get leases.coordination.k8s.io strait-gateway -n strait-system",
		agent + " list nodes -A",
	}) {
		t.Errorf("unused %v", got)
	}
	if len(r.Refused) != 1 || len(r.Stale) != 0 || !r.Failed() {
		t.Errorf("report %+v: want the Secrets list refused, no stale allowance, failed", r)
	}
	if s := r.String(); !strings.Contains(s, `"list nodes -A" (ClusterRole strait-agent)`) || !strings.Contains(s, "refused: ") {
		t.Errorf("report text does not name the unused grant's role and the refusal:\n%s", s)
	}

	r = Check(u, gs, []Allowance{
		{User: agent, Grant: "get configmaps -n strait-system", Why: "used"},
		{User: agent, Grant: "delete configmaps -n strait-system", Why: "no role grants it"},
	})
	if len(r.Stale) != 2 {
		t.Errorf("stale %v: want the used grant's allowance and the one no role grants", r.Stale)
	}
}

func TestUsagesMergeAcrossSuitesAndFiles(t *testing.T) {
	a := readTestdata(t)
	a.Suites = []string{"e2e"}
	b := readTestdata(t)
	b.Suites = []string{"globalnet"}
	for i := range b.Used {
		b.Used[i].Clusters = []string{"g1"}
	}
	dir := t.TempDir()
	if err := a.WriteFile(filepath.Join(dir, "e2e.json")); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile(filepath.Join(dir, "globalnet.json")); err != nil {
		t.Fatal(err)
	}
	u, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Suites, []string{"e2e", "globalnet"}) || len(u.Used) != len(a.Used) || len(u.Refused) != 4 {
		t.Fatalf("merged %+v", u)
	}
	for _, use := range u.Used {
		if !slices.Equal(use.Clusters, []string{"c1", "g1"}) {
			t.Errorf("%s: clusters %v", use.Access, use.Clusters)
		}
	}
	if got := usedLines(u)[agent+" get configmaps missing -n strait-system"]; got != 4 {
		t.Errorf("merged count %d, want 4", got)
	}
}

// A server-side apply of a new object is a patch answered 201 Created, and the API
// server authorized it as a create too (inside the request, unlogged): both are uses.
// Refused at that inner step, it is RBAC's refusal though the patch was allowed.
func TestAPatchThatCreatesUsesCreate(t *testing.T) {
	const hubAccess = "system:serviceaccount:strait-system:strait-hub-access"
	event := func(id string, code int, msg string) string {
		return `{"auditID":"` + id + `","stage":"ResponseComplete","verb":"patch","user":{"username":"` + hubAccess + `"},` +
			`"objectRef":{"resource":"memberships","namespace":"strait-system","name":"membership","apiGroup":"strait.io"},` +
			`"responseStatus":{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `"},` +
			`"requestReceivedTimestamp":"2026-11-26T08:10:31.652050Z","annotations":{"authorization.k8s.io/decision":"allow"}}` + "\n"
	}
	u, err := Read(strings.NewReader(event("1", 201, "")+event("2", 200, "")+
		event("3", 403, `memberships.strait.io \"membership\" is forbidden: User \"`+hubAccess+`\" cannot create resource \"memberships\"`)), "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := usedLines(u)
	if got[hubAccess+" patch memberships.strait.io membership -n strait-system"] != 3 || got[hubAccess+" create memberships.strait.io membership -n strait-system"] != 1 {
		t.Errorf("uses %v: want 3 patches, one of them a create", got)
	}
	if len(u.Refused) != 1 || !u.Refused[0].ByRBAC {
		t.Errorf("refusals %v: want the third, by RBAC", u.Refused)
	}
}

// An informer on an API server that streams lists only watches: its list grant is
// counted with the watch, and shown as such.
func TestAListGrantGoesWithItsInformersWatch(t *testing.T) {
	gs, err := Grants(loadRoles(t, "roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := readTestdata(t)
	u.Used = append(u.Used, Use{Access: Access{User: agent, Verb: "watch", Resource: "nodes"}, Count: 1})
	r := Check(u, gs, nil)
	if got := grantLines(r.ListsBehindWatches); !slices.Equal(got, []string{agent + " list nodes -A"}) {
		t.Errorf("lists behind watches %v", got)
	}
	if got := grantLines(r.Unused); slices.Contains(got, agent+" list nodes -A") {
		t.Errorf("unused %v: the nodes list is the informer's", got)
	}
}

// A refusal while the API server had started and was not ready yet (its RBAC informers
// filling) is the API server's, not the role's; one a moment later is the role's.
func TestARefusalBeforeTheAPIServerIsReadyIsExcused(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "envtest-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The Secrets list was refused at 08:10:31.659566.
	at := time.Date(2026, 11, 26, 8, 10, 31, 659566000, time.UTC)
	u, err := Read(f, "c1", []Interval{{From: at.Add(-2 * time.Second), To: at.Add(time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if fail := u.Refusals(func(string) bool { return true }); len(fail) != 0 {
		t.Errorf("failing refusals %v, want none", fail)
	}
	for _, r := range u.Refused {
		if r.Access.Resource == "secrets" && r.Excused != ExcusedAPIServerNotReady {
			t.Errorf("%s: excused %q", r, r.Excused)
		}
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	u, err = Read(f, "c1", []Interval{{From: at.Add(-2 * time.Second), To: at.Add(-time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if fail := u.Refusals(func(string) bool { return true }); len(fail) != 1 {
		t.Errorf("failing refusals %v, want the Secrets list made after the API server was ready", fail)
	}
}

// terminatingRefusal is the NamespaceLifecycle admission refusing the hub's apply of an
// import into a namespace being deleted, at second s after 08:31:00.
func terminatingRefusal(s float64, ns string) string {
	at := time.Date(2026, 11, 28, 8, 31, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
	return `{"auditID":"t-` + at.Format("150405.000") + `-` + ns + `","stage":"ResponseComplete","verb":"patch","user":{"username":"system:serviceaccount:strait-system:strait-hub-access"},` +
		`"objectRef":{"resource":"serviceimports","namespace":"` + ns + `","name":"hello","apiGroup":"multicluster.x-k8s.io"},` +
		`"responseStatus":{"code":403,"message":"serviceimports.multicluster.x-k8s.io \"hello\" is forbidden: unable to create new content in namespace ` + ns + ` because it is being terminated"},` +
		`"requestReceivedTimestamp":"` + at.Format(time.RFC3339Nano) + `","annotations":{"authorization.k8s.io/decision":"allow"}}`
}

// TestOnlyTheFirstWritesIntoATerminatingNamespaceAreExcused: a write racing its
// namespace's deletion is refused by admission, not the roles, and excused with those
// of the same writer in that namespace within two seconds (one pass); a refusal there
// later is a writer retrying into a namespace it knows is going (the hub's storm of
// hundreds while the MCS conformance suite ran) and fails.
func TestOnlyTheFirstWritesIntoATerminatingNamespaceAreExcused(t *testing.T) {
	log := strings.Join([]string{
		terminatingRefusal(0, "mcs-1"), terminatingRefusal(0.4, "mcs-1"),
		terminatingRefusal(1, "mcs-2"),
		terminatingRefusal(5, "mcs-1"), terminatingRefusal(5.5, "mcs-1"),
	}, "\n")
	u, err := Read(strings.NewReader(log), "c2", nil)
	if err != nil {
		t.Fatal(err)
	}
	var excused, failing []string
	for _, r := range u.Refused {
		if r.Excused == ExcusedNamespaceTerminating {
			excused = append(excused, r.At.Format("05.0")+" "+r.Namespace)
		}
	}
	for _, r := range u.Refusals(func(string) bool { return true }) {
		failing = append(failing, r.At.Format("05.0")+" "+r.Namespace)
	}
	if got, want := strings.Join(excused, ", "), "00.0 mcs-1, 00.4 mcs-1, 01.0 mcs-2"; got != want {
		t.Errorf("excused %s, want %s", got, want)
	}
	if got, want := strings.Join(failing, ", "), "05.0 mcs-1, 05.5 mcs-1"; got != want {
		t.Errorf("failing %s, want %s", got, want)
	}
}
