package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/sharedtable"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/benchcpu"
	"github.com/straitnet/strait/test/bigset"
)

// BenchmarkHubScale measures the hub's CPU per reconcile at 255 members × 10,000
// exports (every member holds 10,000 ServiceImports and 10,000 EndpointSlices): the
// plan (validation, exports, globalnet IPAM), the decision per member, the writes and
// prunes, and the status. Members are in-memory stand-ins (memMember) that answer like
// an API server whose objects are all in place; the facts observed in them are given.
// cpu-s/op is the process's CPU time (user + system) over the measured reconciles, so
// it holds on a machine shared with other work; max-RSS-MiB is the process's peak;
// gc-cycles/op the garbage collections that ran during them; B/op what they allocated;
// live-heap-MiB the heap a collection just before them marked live.
// Each sub-benchmark starts from a collected and swept heap, so that the setup's
// garbage is not collected or swept on a measured reconcile's account: one collection
// of this heap costs about 9 CPU-s (runtime.GC, 2026-11-27), and the runs
// of 2026-11-26 had one reconcile in three at 1.7 cpu-s beside others at 0.18–0.27,
// not attributed then. A reconcile's own share of the collections is B/op over the
// heap's growth allowance (GOGC=100: as much again as is live) times that cost.
//
//   - one-member-change: a Service exported from c007 gets a new cluster IP. Under
//     globalnet that changes c007's GlobalIngress and its own EndpointSlice only.
//   - full-reconcile: nothing changed, every member is checked against what it holds
//     (the periodic resync).
//   - cold-start: a new hub's first reconcile over members that hold everything already
//     (wall-s/op its time); it adopts what is in place, and fails on any write.
//   - hub-heap, last, as it takes the hub's state away: hub-live-heap-MiB is the live
//     heap that dropping the hub's state frees (its record of its writes, its planner,
//     the prints its member informers keep of the kinds it watches),
//     record-nodes the nodes of the members' records the hub holds, each once
//     (sharedtable.Pool): each also has a weak pointer's and a cleanup's record,
//     which the runtime keeps outside the heap and the live heap does not count;
//     stand-ins-live-heap-MiB what stays (the stand-in members' objects, the prints of
//     the kinds the members report, and anything they share with the hub). A hub in a
//     process of its own would hold a little more: strings it shares with the stand-ins.
//
// $STRAIT_HUB_MEMBERS sets another number of members, named in the sub-benchmarks'
// names (make bench runs 64 and 1,000 too).
func BenchmarkHubScale(b *testing.B) {
	ctx := context.Background()
	cs, obs := bigset.New(hubMembers(b), bigset.Exports)
	cs.UID, cs.Generation = "hub-scale", 1 // as the API server gives it: checked once
	h := newScaleHub(b, cs)
	if n := h.reconcile(ctx, cs, obs); n == 0 {
		b.Fatal("the first reconcile wrote nothing")
	}
	writeHeapProfile(b)
	if n := len(cs.Spec.Clusters); n != bigset.Clusters {
		// Another size is named for it: BenchmarkHubScale/members=1000/one-member-change.
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) { h.run(ctx, b, cs, obs) })
		return
	}
	h.run(ctx, b, cs, obs)
}

// run is BenchmarkHubScale's sub-benchmarks over the seeded hub.
func (h *scaleHub) run(ctx context.Context, b *testing.B, cs *straitv1.ClusterSet, obs plan.Observed) {
	b.Run("one-member-change", func(b *testing.B) {
		var cpu time.Duration
		writes := 0
		m := startMeasuring(b)
		defer startCPUProfile(b)()
		defer startAllocProfile(b)()
		for b.Loop() {
			bigset.ToggleServiceIP(obs, 7)
			start := benchcpu.Used()
			writes += h.reconcile(ctx, cs, obs)
			cpu += benchcpu.Used() - start
		}
		// c007's GlobalIngress and its own EndpointSlice of the service, and nothing
		// else: a write more is a pass that touched what did not change.
		if writes != 2*b.N {
			b.Fatalf("the change made %d writes in %d reconciles, want 2 each", writes, b.N)
		}
		m.report(b, cpu, writes)
	})
	b.Run("full-reconcile", func(b *testing.B) {
		h.resyncAlways()
		defer h.resyncAlways()
		var cpu time.Duration
		writes := 0
		m := startMeasuring(b)
		for b.Loop() {
			start := benchcpu.Used()
			writes += h.reconcile(ctx, cs, obs)
			cpu += benchcpu.Used() - start
		}
		// Nothing changed since the last reconcile: a resync checks every member and
		// writes nothing (a write is an object it took for changed).
		if writes != 0 {
			b.Fatalf("a resync with nothing changed made %d writes in %d reconciles, want none", writes, b.N)
		}
		m.report(b, cpu, writes)
	})
	b.Run("cold-start", func(b *testing.B) {
		// A hub started over members that hold every object already (a restart, a
		// leader election): no record of its writes, no planner, its member informers
		// synced (the stand-ins' prints are what a real hub's informers list first, and
		// that listing is not timed here). Timed: its first reconcile, which checks every
		// member.
		var cpu, wall time.Duration
		writes := 0
		m := startMeasuring(b)
		for b.Loop() {
			h.restart()
			start, t0 := benchcpu.Used(), time.Now()
			writes += h.reconcile(ctx, cs, obs)
			cpu += benchcpu.Used() - start
			wall += time.Since(t0)
		}
		// Every object carries the digest of what the hub wrote, and the new hub adopts
		// it (adoptable): a write is an object it could not tell from its plan's.
		if writes != 0 {
			b.Fatalf("a new hub over members in place made %d writes in %d reconciles, want none", writes, b.N)
		}
		m.report(b, cpu, writes)
		b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/op")
	})
	b.Run("hub-heap", func(b *testing.B) {
		runtime.GC()
		before, nodes := heapLive(), h.r.shared.Nodes()
		h.dropHubState()
		runtime.GC()
		after := heapLive()
		for b.Loop() {
		}
		b.ReportMetric(float64(before-after)/(1<<20), "hub-live-heap-MiB")
		b.ReportMetric(float64(after)/(1<<20), "stand-ins-live-heap-MiB")
		b.ReportMetric(float64(nodes), "record-nodes")
		b.ReportMetric(0, "ns/op")
	})
}

// hubMembers is $STRAIT_HUB_MEMBERS, or bigset.Clusters.
func hubMembers(b *testing.B) int {
	v := os.Getenv("STRAIT_HUB_MEMBERS")
	if v == "" {
		return bigset.Clusters
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 || n > bigset.MaxClusters {
		b.Fatalf("STRAIT_HUB_MEMBERS=%q: want a number of members from 2 to %d", v, bigset.MaxClusters)
	}
	return n
}

// restart is a new hub process over the same members: it forgets what it wrote and
// its plans, and keeps the members' prints (its informers list them before the first
// reconcile).
func (h *scaleHub) restart() {
	h.r.applied.Clear()
	h.r.planners.Clear()
	h.r.relevance.Clear()
	h.planner = plan.NewPlanner()
}

// dropHubState lets go of everything the hub keeps between reconciles, and of the
// stand-ins' prints of the kinds a real hub watches, which its member informers keep.
// The stand-ins' prints of the kinds the members report (memberprint.Reported) stay:
// in a real ClusterSet strait dns keeps them, in each member.
func (h *scaleHub) dropHubState() {
	h.r.applied.Clear()
	h.r.shared = sharedtable.Pool{} // its map of the nodes: the tables' nodes go with them
	h.r.planners.Clear()
	h.planner = nil
	h.conns = nil
	for _, m := range h.members {
		m.prints = members.NewPrints(nil) // keeps no kind
	}
}

// writeHeapProfile writes the live heap after the seed reconcile to the file
// $STRAIT_HEAP_PROFILE names, if any, for `go tool pprof -sample_index=inuse_space`:
// what the hub keeps (its record of its writes, the plan) apart from what the stand-in
// members keep (their objects, and the prints their informers' events feed).
func writeHeapProfile(b *testing.B) {
	path := os.Getenv("STRAIT_HEAP_PROFILE")
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// startCPUProfile profiles the CPU into the file $STRAIT_CPU_PROFILE names, if any,
// until the function it returns is called: one-member-change's reconciles alone,
// without the seeding that -cpuprofile would take in.
func startCPUProfile(b *testing.B) (stop func()) {
	path := os.Getenv("STRAIT_CPU_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// startAllocProfile writes the allocations so far to $STRAIT_ALLOC_PROFILE.base, and
// those when the function it returns is called to $STRAIT_ALLOC_PROFILE, if it is set:
// `go tool pprof -sample_index=alloc_space -base X.base X` shows what the reconciles
// between allocated, without the seeding.
func startAllocProfile(b *testing.B) (stop func()) {
	path := os.Getenv("STRAIT_ALLOC_PROFILE")
	if path == "" {
		return func() {}
	}
	write := func(name string) {
		runtime.GC() // the profile shows allocations as of the last collection
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	write(path + ".base")
	return func() { write(path) }
}

// measuring is a sub-benchmark's report besides its CPU: the collections that ran
// during its reconciles and the heap live before them.
type measuring struct{ gcs, live uint64 }

// startMeasuring collects and sweeps the setup's garbage, so that none of it is
// collected on a measured reconcile's account, and counts allocations from here.
func startMeasuring(b *testing.B) measuring {
	b.ReportAllocs()
	runtime.GC()
	return measuring{gcs: gcCycles(), live: heapLive()}
}

func (m measuring) report(b *testing.B, cpu time.Duration, writes int) {
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(gcCycles()-m.gcs)/float64(b.N), "gc-cycles/op")
	b.ReportMetric(float64(m.live)/(1<<20), "live-heap-MiB")
	b.ReportMetric(maxRSSMiB(), "max-RSS-MiB")
	b.ReportMetric(0, "ns/op") // wall time on a shared machine says little
}

// scaleHub is a reconciler over in-memory members.
type scaleHub struct {
	r       *ClusterSetReconciler
	planner *plan.Planner
	members map[string]*memMember
	conns   map[string]*conn
}

func newScaleHub(b testing.TB, cs *straitv1.ClusterSet) *scaleHub {
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := &scaleHub{
		// The resync is full-reconcile's: no member's last pass may come due during
		// one-member-change, however long the seed took (over 10 minutes, the default
		// interval, at 1,000 members).
		r: &ClusterSetReconciler{recorder: &events.FakeRecorder{}, metrics: metrics,
			cfg: Config{RetryInterval: time.Minute, MaxConcurrentMembers: DefaultMaxConcurrentMembers, ResyncInterval: scaleResync}},
		planner: plan.NewPlanner(),
		members: map[string]*memMember{},
		conns:   map[string]*conn{},
	}
	key := types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}
	statuses := newImportStatuses()
	for _, c := range cs.Spec.Clusters {
		mk := members.Key{ClusterSet: key, Cluster: c.Name}
		m := newMemMember(mk, statuses)
		h.members[c.Name] = m
		h.conns[c.Name] = &conn{name: c.Name, member: &members.Member{Key: mk, Client: m, Reader: m, Prints: m.prints}}
	}
	return h
}

// reconcile is the part of Reconcile after connecting and observing; it returns the
// writes it made.
func (h *scaleHub) reconcile(ctx context.Context, cs *straitv1.ClusterSet, obs plan.Observed) int {
	before := h.writes()
	spec, errs := h.planner.Check(cs)
	if len(errs) > 0 {
		panic(errs.ToAggregate())
	}
	p, errs := h.planner.Compute(spec, obs)
	if len(errs) > 0 {
		panic(errs.ToAggregate())
	}
	obj := cs.DeepCopy()
	results := h.r.writeMembers(ctx, obj, p, h.conns)
	h.r.setStatus(obj, p, h.conns, results, records(nil).known(obj), time.Now())
	for name, res := range results {
		if res.err != nil {
			panic(name + ": " + res.err.Error())
		}
	}
	return h.writes() - before
}

func (h *scaleHub) writes() int {
	n := 0
	for _, m := range h.members {
		n += m.writeCount()
	}
	return n
}

// resyncAlways makes every reconcile check every member in full, as the periodic
// resync does, or (called again) puts scaleResync back.
func (h *scaleHub) resyncAlways() {
	if h.r.cfg.ResyncInterval == time.Nanosecond {
		h.r.cfg.ResyncInterval = scaleResync
		return
	}
	h.r.cfg.ResyncInterval = time.Nanosecond
}

// scaleResync is BenchmarkHubScale's resync interval but in full-reconcile.
const scaleResync = 24 * time.Hour

// gcCycles is how many garbage collections the process has completed.
func gcCycles() uint64 {
	m := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// heapLive is the heap the last collection marked live, in bytes.
func heapLive() uint64 {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// maxRSSMiB is the process's peak resident set.
func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}
