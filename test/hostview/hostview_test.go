package hostview

import (
	"strings"
	"testing"
)

// TestDiffOfNodeCgroups: a node cgroup the run made and left is reported; one there
// before it (a killed run's, another lab's) is not, whether the run removed it or not.
func TestDiffOfNodeCgroups(t *testing.T) {
	stale := View{Cgroups: []string{"/sys/fs/cgroup/pids/strait-node-c1-gw-1"}}
	if d := stale.Diff(View{}); d != "" {
		t.Errorf("a stale node cgroup removed by the lab is reported: %s", d)
	}
	if d := (View{}).Diff(stale); !strings.Contains(d, "strait-node-c1-gw-1") {
		t.Errorf("a node cgroup left by the lab is not reported: %q", d)
	}
	if d := stale.Diff(stale); d != "" {
		t.Errorf("a node cgroup there before the run is reported: %s", d)
	}
	both := View{Cgroups: append([]string{"/sys/fs/cgroup/pids/strait-node-c1-gw-0"}, stale.Cgroups...)}
	if d := stale.Diff(both); !strings.Contains(d, "c1-gw-0") || strings.Contains(d, "c1-gw-1") {
		t.Errorf("only the node cgroup the run made must be reported: %q", d)
	}
	before := View{Entries: map[string][]string{"/run": {"user-thing"}}}
	if d := before.Diff(View{Entries: map[string][]string{"/run": nil}}); !strings.Contains(d, "user-thing") {
		t.Errorf("an entry of the host removed by the lab is not reported: %q", d)
	}
}
