package rbacaudit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The events of testdata/envtest-audit.log these tests copy, by line: the administrator
// deletes the RoleBinding strait-agent, the agent is refused a ConfigMap, the
// administrator creates the RoleBinding again.
const (
	lineDeleteBinding = 10
	lineRefusedGet    = 11
	lineCreateBinding = 12
)

// deletedAt is when testdata/envtest-audit.log's RoleBinding was deleted.
var deletedAt = time.Date(2026, 11, 26, 8, 10, 31, 672609000, time.UTC)

// auditEvent is the event on line n of testdata/envtest-audit.log.
func auditEvent(t *testing.T, n int) map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "envtest-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for i := 1; sc.Scan(); i++ {
		if i == n {
			ev := map[string]any{}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatal(err)
			}
			return ev
		}
	}
	t.Fatalf("testdata/envtest-audit.log has no line %d", n)
	return nil
}

// moved is the event on line n made again as request id at after the RoleBinding's
// deletion (answered 2 ms later), in namespace ns ("" for a cluster-scoped object)
// and, for an RBAC object, of resource res ("" leaves the event's).
func moved(t *testing.T, n int, id string, after time.Duration, ns, res string) string {
	t.Helper()
	ev := auditEvent(t, n)
	at := deletedAt.Add(after)
	ev["auditID"] = id
	ev["requestReceivedTimestamp"] = at.Format(time.RFC3339Nano)
	ev["stageTimestamp"] = at.Add(2 * time.Millisecond).Format(time.RFC3339Nano)
	ref := ev["objectRef"].(map[string]any)
	ref["namespace"] = ns
	if res != "" {
		ref["resource"] = res
	}
	line, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// excusedByID reads the log lines and says, per refused request (its namespace and its
// time after deletedAt), whether a change of the roles excuses it.
func excusedByID(t *testing.T, lines ...string) map[string]bool {
	t.Helper()
	u, err := Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range u.Refused {
		out[r.Namespace+" +"+r.At.Sub(deletedAt).String()] = r.Excused == ExcusedRolesChanging
	}
	return out
}

func checkExcused(t *testing.T, got, want map[string]bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("refusals %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("refusal in %s: excused %v, want %v", k, got[k], w)
		}
	}
}

// TestADeletionExcusesOnlyTheMomentsAfterIt: a RoleBinding deleted and never written
// again excuses its holder's refusals while the holder is on its way out (half a second,
// half a minute later), not one a minute later: a daemon still refused then outlived
// its uninstall, or lost its role for good.
func TestADeletionExcusesOnlyTheMomentsAfterIt(t *testing.T) {
	got := excusedByID(t,
		moved(t, lineDeleteBinding, "delete", 0, "strait-system", ""),
		moved(t, lineRefusedGet, "r1", 500*time.Millisecond, "strait-system", ""),
		moved(t, lineRefusedGet, "r2", 30*time.Second, "strait-system", ""),
		moved(t, lineRefusedGet, "r3", time.Minute, "strait-system", ""),
	)
	checkExcused(t, got, map[string]bool{"strait-system +500ms": true, "strait-system +30s": true, "strait-system +1m0s": false})
}

// TestAReinstalledRoleExcusesUntilTheAuthorizerHasIt: the RoleBinding created again
// two minutes after its deletion (a reinstall) excuses refusals in the moments the
// authorizer's informer takes to see it, not one before it (the deletion is long past)
// or 15 s after; a write of an object never deleted (a lab up over a running install)
// excuses nothing.
func TestAReinstalledRoleExcusesUntilTheAuthorizerHasIt(t *testing.T) {
	got := excusedByID(t,
		moved(t, lineDeleteBinding, "delete", 0, "strait-system", ""),
		moved(t, lineRefusedGet, "r1", 119*time.Second, "strait-system", ""),
		moved(t, lineCreateBinding, "create", 2*time.Minute, "strait-system", ""),
		moved(t, lineRefusedGet, "r2", 2*time.Minute+500*time.Millisecond, "strait-system", ""),
		moved(t, lineRefusedGet, "r3", 2*time.Minute+8*time.Second, "strait-system", ""),
		moved(t, lineRefusedGet, "r4", 2*time.Minute+15*time.Second, "strait-system", ""),
	)
	checkExcused(t, got, map[string]bool{
		"strait-system +1m59s": false, "strait-system +2m0.5s": true, "strait-system +2m8s": true, "strait-system +2m15s": false,
	})

	got = excusedByID(t,
		moved(t, lineCreateBinding, "patch", 0, "strait-system", ""),
		moved(t, lineRefusedGet, "r1", time.Second, "strait-system", ""),
	)
	checkExcused(t, got, map[string]bool{"strait-system +1s": false})
}

// TestADeletionExcusesOnlyWhatItCouldGrant: a RoleBinding grants only in its own
// namespace, so its deletion in strait-system does not excuse a refusal in kube-system;
// a ClusterRoleBinding's does (it may grant anywhere).
func TestADeletionExcusesOnlyWhatItCouldGrant(t *testing.T) {
	got := excusedByID(t,
		moved(t, lineDeleteBinding, "delete", 0, "strait-system", ""),
		moved(t, lineRefusedGet, "r1", time.Second, "kube-system", ""),
		moved(t, lineRefusedGet, "r2", time.Second+time.Millisecond, "strait-system", ""),
	)
	checkExcused(t, got, map[string]bool{"kube-system +1s": false, "strait-system +1.001s": true})

	got = excusedByID(t,
		moved(t, lineDeleteBinding, "delete", 0, "", "clusterrolebindings"),
		moved(t, lineRefusedGet, "r1", time.Second, "kube-system", ""),
	)
	checkExcused(t, got, map[string]bool{"kube-system +1s": true})
}
