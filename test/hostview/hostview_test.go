package hostview

import (
	"strings"
	"testing"
)

// TestDiffOfNodeCgroups: a node cgroup left after the lab is reported, one a killed
// earlier run left and this lab removed is not.
func TestDiffOfNodeCgroups(t *testing.T) {
	stale := View{Cgroups: []string{"/sys/fs/cgroup/pids/strait-node-c1-gw-1"}}
	if d := stale.Diff(View{}); d != "" {
		t.Errorf("a stale node cgroup removed by the lab is reported: %s", d)
	}
	if d := (View{}).Diff(stale); !strings.Contains(d, "strait-node-c1-gw-1") {
		t.Errorf("a node cgroup left by the lab is not reported: %q", d)
	}
	if d := stale.Diff(stale); d == "" {
		t.Error("a node cgroup the lab did not remove is not reported")
	}
	before := View{Entries: map[string][]string{"/run": {"user-thing"}}}
	if d := before.Diff(View{Entries: map[string][]string{"/run": nil}}); !strings.Contains(d, "user-thing") {
		t.Errorf("an entry of the host removed by the lab is not reported: %q", d)
	}
}
