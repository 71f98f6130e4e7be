package plan

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

const examplesDir = "../examples/clusterset"

// loadExample parses an example's ClusterSet and its observed facts.
func loadExample(t testing.TB, name string) (*straitv1.ClusterSet, Observed) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name, "clusterset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Parse(data)
	if err != nil {
		t.Fatalf("parsing example %s: %v", name, err)
	}
	obs := Observed{}
	files, _ := filepath.Glob(filepath.Join(examplesDir, name, "observed", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cluster := strings.TrimSuffix(filepath.Base(f), ".yaml")
		facts := &MemberFacts{}
		if err := DecodeObserved(f, data, facts); err != nil {
			t.Fatal(err)
		}
		obs[cluster] = facts
	}
	return cs, obs
}

func examples(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(examplesDir, e.Name(), "clusterset.yaml")); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no examples found")
	}
	return out
}

func mustCompute(t testing.TB, cs *straitv1.ClusterSet, obs Observed) *Plan {
	t.Helper()
	p, errs := Compute(cs, obs)
	if len(errs) > 0 {
		t.Fatalf("Compute: %v", errs.ToAggregate())
	}
	return p
}

// heldBy returns what members hold after the hub applied p: their Membership and
// GlobalIngresses, on top of the facts in obs — the input a rebuilt hub reads back.
func heldBy(p *Plan, obs Observed) Observed {
	out := Observed{}
	for _, c := range p.Clusters() {
		f := &MemberFacts{}
		if prev := obs[c]; prev != nil {
			*f = *prev
			f.GlobalIngresses = nil
		}
		for _, o := range p.Objects(c) {
			switch v := o.(type) {
			case *straitv1.Membership:
				f.Membership = v
			case *straitv1.GlobalIngress:
				f.GlobalIngresses = append(f.GlobalIngresses, *v)
			}
		}
		out[c] = f
	}
	return out
}

// groupMap is a member's group digests by group.
func groupMap(g Groups) map[string]uint64 {
	out := make(map[string]uint64, len(g.Keys))
	for i, k := range g.Keys {
		out[k] = g.Digest(i)
	}
	return out
}
