package plan_test

import (
	"encoding/json"
	"testing"

	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/benchcpu"
	"github.com/straitnet/strait/test/bigset"
)

// BenchmarkCompute: validation, export resolution and globalnet IPAM for the whole
// clusterset (what the hub does once per reconcile).
func BenchmarkCompute(b *testing.B) {
	cs, obs := bigset.New(bigset.Clusters, bigset.Exports)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		if _, errs := plan.Compute(cs, obs); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
	cpu.Report()
}

// BenchmarkMemberObjects: materializing one member's objects (Membership, 254 Peers,
// its GlobalIngresses, 10,000 ServiceImports and 10,000 EndpointSlices). The hub does
// this once per member per reconcile.
func BenchmarkMemberObjects(b *testing.B) {
	cs, obs := bigset.New(bigset.Clusters, bigset.Exports)
	p, errs := plan.Compute(cs, obs)
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		if objs := p.Objects("c007"); len(objs) < 20000 {
			b.Fatalf("only %d objects", len(objs))
		}
	}
	cpu.Report()
}

// TestBigClusterSetFitsInEtcd: a ClusterSet with 255 clusters and 10,000 exports, with
// the status the plan implies, stays well under etcd's ~1.5 MB object limit, and so do
// the largest member objects.
func TestBigClusterSetFitsInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-export clusterset")
	}
	cs, obs := bigset.New(bigset.Clusters, bigset.Exports)
	p, errs := plan.Compute(cs, obs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	cs.Status = p.Status
	const limit = 1536 * 1024
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > limit*3/4 {
		t.Errorf("ClusterSet with status is %d bytes, want under %d", len(data), limit*3/4)
	}
	for _, o := range p.Objects("c000") {
		d, _ := json.Marshal(o)
		if len(d) > 64*1024 {
			t.Errorf("%T %s is %d bytes", o, o.GetName(), len(d))
		}
	}
	t.Logf("ClusterSet with 10,000 exports and status: %d bytes", len(data))
}

// BenchmarkMemberDigests: the digest of every one of 255 members, what the hub computes
// per reconcile to find the members it can skip (on a fresh plan, so the shared parts
// are hashed each time too).
func BenchmarkMemberDigests(b *testing.B) {
	cs, obs := bigset.New(bigset.Clusters, bigset.Exports)
	b.ReportAllocs()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		b.StopTimer()
		cpu.Pause()
		p, errs := plan.Compute(cs, obs)
		if len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
		cpu.Resume()
		b.StartTimer()
		for _, c := range p.Clusters() {
			if p.MemberDigest(c) == 0 {
				b.Fatalf("no digest for %s", c)
			}
		}
	}
	cpu.Report()
}
