package plan_test

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"

	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/benchcpu"
	"github.com/straitnet/strait/test/bigset"
)

// BenchmarkCompute: validation, export resolution and globalnet IPAM for the whole
// clusterset (what the hub does once per reconcile).
func BenchmarkCompute(b *testing.B) { benchCompute(b, bigset.Clusters) }

// benchCompute times plan.Compute over bigset's 10,000 exports from clusters clusters.
func benchCompute(b *testing.B, clusters int) {
	cs, obs := bigset.New(clusters, bigset.Exports)
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

// BenchmarkPlannerOneChange: the plan after one service of c007 got a new cluster IP,
// by a Planner that keeps the other 9,999 exports' resolutions (what the hub does per
// reconcile); BenchmarkCompute is the same plan from nothing.
func BenchmarkPlannerOneChange(b *testing.B) { benchPlannerOneChange(b, bigset.Clusters) }

// BenchmarkPlannerOneChangeDigests: BenchmarkPlannerOneChange and then every member's
// digest, as the hub asks for them to find the members it can pass over: the planner's
// part of BenchmarkHubScale/one-member-change.
func BenchmarkPlannerOneChangeDigests(b *testing.B) {
	benchPlannerOneChange(b, bigset.Clusters, func(p *plan.Plan) {
		for _, c := range p.Clusters() {
			if p.MemberDigest(c) == 0 {
				b.Fatalf("no digest for %s", c)
			}
		}
	})
}

// BenchmarkPlanScale: the plan of 10,000 exports over 64, 255 and 1,000 members (the
// most the product takes), from nothing (compute) and after one change (one-change),
// so that the growth with members shows.
func BenchmarkPlanScale(b *testing.B) {
	for _, n := range []int{64, bigset.Clusters, bigset.MaxClusters} {
		b.Run(fmt.Sprintf("members=%d/compute", n), func(b *testing.B) { benchCompute(b, n) })
		b.Run(fmt.Sprintf("members=%d/one-change", n), func(b *testing.B) { benchPlannerOneChange(b, n) })
	}
}

// benchPlannerOneChange times a Planner's plan after one service of c007 changed, over
// bigset's 10,000 exports from clusters clusters, and what then asks each plan.
func benchPlannerOneChange(b *testing.B, clusters int, then ...func(*plan.Plan)) {
	cs, obs := bigset.New(clusters, bigset.Exports)
	v, errs := plan.Check(cs)
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	pl := plan.NewPlanner()
	p, errs := pl.Compute(v, obs)
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	for _, f := range then {
		f(p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		b.StopTimer()
		cpu.Pause()
		bigset.ToggleServiceIP(obs, 7)
		cpu.Resume()
		b.StartTimer()
		p, errs := pl.Compute(v, obs)
		if len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
		for _, f := range then {
			f(p)
		}
		if pl.Resolved != 1 {
			b.Fatalf("the change resolved %d exports again, want 1", pl.Resolved)
		}
	}
	cpu.Report()
}

// BenchmarkComputeFewMembers: the same 10,000 exports from two clusters, 5,000 each.
// Looking a service's facts up by a scan of its member's made this 1.0 s a plan against
// 0.1 s over 255 clusters (quadratic in the exports per member); the facts are indexed
// once per plan now.
func BenchmarkComputeFewMembers(b *testing.B) { benchCompute(b, 2) }

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

// TestBigClusterSetFitsInEtcd: a ClusterSet with 255 clusters and one with 1,000 (the
// most the product accepts), each with 10,000 exports and the status a hub writes (the
// plan's, every member's Peers reported and the hub's own conditions and inventory per
// member, MaxStatusClusters of them listed), stays well under etcd's ~1.5 MB object
// limit, and so do the largest member objects and every ClusterSetMember; also while
// every cable is down, when the status says the most.
func TestBigClusterSetFitsInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-export clusterset")
	}
	const limit = 1536 * 1024
	for _, clusters := range []int{bigset.Clusters, bigset.MaxClusters} {
		for _, state := range []string{"Connected", "Error"} {
			cs, obs := bigset.New(clusters, bigset.Exports)
			bigset.WithPeers(cs, obs, state)
			p, errs := plan.Compute(cs, obs)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			cs.Status = p.Status
			hubAdds(&cs.Status)
			all := cs.Status.Clusters
			cs.Status.Clusters = plan.StatusClusters(all)
			data, err := json.Marshal(cs)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > limit*3/4 {
				t.Errorf("%d clusters, peers %s: ClusterSet with status is %d bytes, want under %d", clusters, state, len(data), limit*3/4)
			}
			biggest := 0
			for i := range all {
				d, _ := json.Marshal(straitv1.ClusterSetMember{ObjectMeta: metav1.ObjectMeta{Name: straitv1.ClusterSetMemberName(cs.Name, all[i].Name)},
					Spec: straitv1.ClusterSetMemberSpec{ClusterSet: cs.Name, Cluster: all[i].Name}, Status: all[i]})
				biggest = max(biggest, len(d))
			}
			if biggest > 64*1024 {
				t.Errorf("%d clusters, peers %s: a ClusterSetMember is %d bytes", clusters, state, biggest)
			}
			t.Logf("%d clusters, peers %s: ClusterSet with 10,000 exports and status: %d bytes (%d clusters listed); largest ClusterSetMember %d bytes",
				clusters, state, len(data), len(cs.Status.Clusters), biggest)
			for _, o := range p.Objects(bigset.Name(0)) {
				d, _ := json.Marshal(o)
				if len(d) > 64*1024 {
					t.Errorf("%T %s is %d bytes", o, o.GetName(), len(d))
				}
			}
		}
	}
}

// hubAdds puts into st what the hub adds to the plan's status for each member, as large
// as it gets: its Connected and Ready conditions, an inventory of every kind it writes,
// the kube-system UID and the kubeconfig reference.
func hubAdds(st *straitv1.ClusterSetStatus) {
	now := metav1.Now()
	for i := range st.Clusters {
		c := &st.Clusters[i]
		c.Conditions = append(c.Conditions,
			metav1.Condition{Type: straitv1.ConditionConnected, Status: metav1.ConditionTrue, Reason: straitv1.ReasonConnected,
				Message: "the hub reaches the member's API server", LastTransitionTime: now, ObservedGeneration: 12},
			metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: straitv1.ReasonApplied,
				Message: "20512 objects in place", LastTransitionTime: now, ObservedGeneration: 12})
		c.Inventory = map[string]int32{"Membership": 1, "Peer": 254, "GlobalIngress": 40, "ServiceImport": 10000,
			"EndpointSlice": 10000, "ServiceExport": 40, "Secret": 1}
		c.KubeSystemUID = "0b4f1d9e-5c2a-4b7e-9f3d-2a6c8e1f4b70"
	}
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
