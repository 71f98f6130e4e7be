package e2e

import (
	"strings"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// TestShowAllAndVersionWithTheHubKubeconfigAlone: the built strait, given only the hub's
// kubeconfig (the members are reached through their Secrets in the hub, at their LAN
// addresses through the host's link into the lab), shows what an operator looks for:
// both tunnels Connected, each cluster's active gateway by name, and every daemon (the
// hub, an agent on every node, both strait dns servers of each member) running the build
// of the images, which is this strait's: no warning, exit 0.
func TestShowAllAndVersionWithTheHubKubeconfigAlone(t *testing.T) {
	env.Require(t)
	hub := env.Lab.State().KubeconfigPath(topology.HubName)
	version, revision := env.ImageBuild()
	if version == "" {
		t.Fatal("no bin/images/.strait-id: make image records the images' build there")
	}
	active := map[string]string{}
	for _, c := range members() {
		active[c] = env.ActiveGateway(t, c).Name
	}

	out, errOut, code := exitCode(t, env.Strait, "show", "all", "--kubeconfig", hub)
	t.Logf("strait show all: exit %d\n%s%s", code, out, errOut)
	if code != 0 || errOut != "" {
		t.Errorf("strait show all: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	sections := splitSections(out)
	for _, c := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
		r := fields(sections["CONNECTIONS"], c[0], c[1])
		if len(r) < 7 || r[2] != active[c[0]] || r[3] != active[c[1]] || r[6] != "Connected" {
			t.Errorf("connection %s → %s: %q; want it reported by %s, towards %s, Connected", c[0], c[1], r, active[c[0]], active[c[1]])
		}
	}
	for _, c := range members() {
		if r := fields(sections["ENDPOINTS"], c, active[c]); r == nil {
			t.Errorf("endpoints: no row naming %s's active gateway %s", c, active[c])
		}
		if r := fields(sections["GATEWAYS"], c, active[c], "active"); r == nil {
			t.Errorf("gateways: %s is not shown active in %s", active[c], c)
		}
	}

	// The sample's import in c1: its families (the sample's Services are IPv4's, also
	// on a dual-stack lab) and a clusterset IP of each, exported by c2.
	if r := fields(sections["IMPORTS"], "c1", "sample", "whereami-cs", "ClusterSetIP"); len(r) < 7 || !strings.HasPrefix(r[4], "IPv4") ||
		strings.Count(r[5], ",") != strings.Count(r[4], ",") || r[5] == "-" || r[6] != "c2" {
		t.Errorf("imports: c1's sample/whereami-cs %q; want ClusterSetIP, IPv4 first, a clusterset IP a family, exported by c2", r)
	}

	out, errOut, code = exitCode(t, env.Strait, "version", "--kubeconfig", hub)
	t.Logf("strait version: exit %d\n%s%s", code, out, errOut)
	if code != 0 || errOut != "" {
		t.Errorf("strait version: exit %d, stderr %q; want 0 and no warning", code, errOut)
	}
	if !strings.HasPrefix(out, "strait "+version+" (revision "+revision+", ") {
		t.Errorf("strait version's first line: want strait %s (revision %s, …)", version, revision)
	}
	// As strait prints it: the commit's first 12 hex digits, and -dirty after a build
	// from a tree with uncommitted changes.
	short, dirty := strings.CutSuffix(revision, "-dirty")
	if len(short) >= 12 {
		short = short[:12]
	}
	if dirty {
		short += "-dirty"
	}
	count := map[string]int{}
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] == "CLUSTER" {
			continue
		}
		if f[4] != version || f[5] != short {
			t.Errorf("%s: %s %s, want the images' %s %s", line, f[4], f[5], version, short)
		}
		count[f[0]+" "+f[1]]++
	}
	want := map[string]int{"hub hub": 1}
	for _, c := range members() {
		want[c+" agent"] = len(env.StraitPods(t, c, labtest.AgentApp, ""))
		want[c+" dns"] = len(env.StraitPods(t, c, labtest.DNSApp, ""))
	}
	for k, n := range want {
		if count[k] != n || n == 0 {
			t.Errorf("%s: %d daemons reported, %d running", k, count[k], n)
		}
	}
}

// splitSections splits strait show all's output by its section headers.
func splitSections(out string) map[string]string {
	sections := map[string]string{}
	var name string
	for _, line := range strings.Split(out, "\n") {
		if line != "" && line == strings.ToUpper(line) && !strings.Contains(line, " ") {
			name = line
			continue
		}
		sections[name] += line + "\n"
	}
	return sections
}

// fields is the table row whose first fields are first, split on blanks; nil if none.
func fields(table string, first ...string) []string {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(first) && strings.Join(f[:len(first)], " ") == strings.Join(first, " ") {
			return f
		}
	}
	return nil
}
