package prints

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/memberprint"
)

// object is a hub's object of the member as the informer hands it over: clusterSet ""
// for one without the hub's labels.
func object(ns, name, rv, clusterSet string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if clusterSet != "" {
		o.Labels = map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: clusterSet}
	}
	return o
}

// printed is an object of a kind.
type printed struct {
	kind string
	obj  client.Object
}

// want is status.prints computed from scratch over what the member holds.
func want(own string, held []printed) []straitv1.MemberPrint {
	sums := map[[2]string]memberprint.Print{}
	sets := map[string]bool{}
	if own != "" {
		sets[own] = true
	}
	for _, h := range held {
		cs, ok := memberprint.Counted(h.obj)
		if !ok {
			continue
		}
		sets[cs] = true
		p := sums[[2]string{cs, h.kind}]
		p.Add(memberprint.Of(h.kind, h.obj))
		sums[[2]string{cs, h.kind}] = p
	}
	var out []straitv1.MemberPrint
	for cs := range sets {
		for _, kind := range memberprint.ReportedKinds() {
			p := sums[[2]string{cs, kind}]
			out = append(out, straitv1.MemberPrint{ClusterSet: cs, Kind: kind, Count: int32(p.N), Sum: memberprint.FormatSum(p.Sum)})
		}
	}
	slices.SortFunc(out, compare)
	return out
}

func printsOf(t *testing.T, k *Keeper, own string) []straitv1.MemberPrint {
	t.Helper()
	got, omitted := k.Report(own)
	if omitted != 0 {
		t.Fatalf("%d ClusterSets left out", omitted)
	}
	return got
}

// event is one informer event: an add or update of obj, or a delete (of obj, or of
// its key only: DeletedFinalStateUnknown).
type event struct {
	kind    string
	obj     *metav1.PartialObjectMetadata
	deleted bool
	unknown bool
}

func (e event) feed(k *Keeper) {
	h := k.Handler(e.kind, nil)
	switch {
	case e.unknown:
		h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: e.obj.Namespace + "/" + e.obj.Name, Obj: e.obj})
	case e.deleted:
		h.OnDelete(e.obj)
	default:
		h.OnUpdate(nil, e.obj)
	}
}

// history is, per object, the events an informer hands over for it (in order) and what
// the store holds at the end (nothing when the last event deletes it).
func history(rng *rand.Rand, n int) (events [][]event, final []printed) {
	kinds := memberprint.ReportedKinds()
	sets := []string{"ns1.cs1", "ns1.cs1", "ns2.other", ""} // "": not the hub's
	rv := 0
	for i := range n {
		kind := kinds[rng.IntN(len(kinds))]
		ns, name := "ns"+strconv.Itoa(i%3), fmt.Sprintf("o%d", i)
		var evs []event
		var last *metav1.PartialObjectMetadata
		for range 1 + rng.IntN(4) {
			rv++
			last = object(ns, name, strconv.Itoa(rv), sets[rng.IntN(len(sets))])
			evs = append(evs, event{kind: kind, obj: last})
		}
		switch rng.IntN(4) {
		case 0: // deleted, and the watch said so, with the resourceVersion of the delete
			rv++
			gone := last.DeepCopy()
			gone.ResourceVersion = strconv.Itoa(rv)
			evs = append(evs, event{kind: kind, obj: gone, deleted: true})
		case 1: // deleted while the watch was down: the relist says so
			evs = append(evs, event{kind: kind, obj: last, unknown: true})
		default:
			final = append(final, printed{kind, last})
		}
		events = append(events, evs)
	}
	return events, final
}

// TestEventsInAnyOrderConvergeOnTheStore feeds the same objects' events interleaved in
// many orders (each object's own in order, as an informer hands them): the prints are
// always those computed from the objects the store holds at the end.
func TestEventsInAnyOrderConvergeOnTheStore(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		events, final := history(rng, 40)
		wanted := want("ns1.cs1", final)
		for range 5 {
			k := NewKeeper()
			next := make([]int, len(events))
			left := len(events)
			for left > 0 {
				i := rng.IntN(len(events))
				if next[i] == len(events[i]) {
					continue
				}
				events[i][next[i]].feed(k)
				if next[i]++; next[i] == len(events[i]) {
					left--
				}
			}
			if got := printsOf(t, k, "ns1.cs1"); !reflect.DeepEqual(got, wanted) {
				t.Fatalf("seed %d:\ngot  %v\nwant %v", seed, got, wanted)
			}
		}
	}
}

// TestARelistConvergesOnTheStore replays what a relist hands over after missed events:
// an update of every object held (some seen before, some not) and a
// DeletedFinalStateUnknown for every object the keeper had that is gone.
func TestARelistConvergesOnTheStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	events, final := history(rng, 60)
	k := NewKeeper()
	for _, evs := range events[:30] { // the watch broke after half the objects' first events
		evs[0].feed(k)
	}
	held := map[string]bool{}
	for _, f := range final {
		held[f.obj.GetNamespace()+"/"+f.obj.GetName()] = true
		k.Saw(f.kind, f.obj)
	}
	for _, evs := range events[:30] {
		e := evs[0]
		if !held[e.obj.Namespace+"/"+e.obj.Name] {
			event{kind: e.kind, obj: e.obj, unknown: true}.feed(k)
		}
	}
	if got, wanted := printsOf(t, k, "ns1.cs1"), want("ns1.cs1", final); !reflect.DeepEqual(got, wanted) {
		t.Fatalf("got  %v\nwant %v", got, wanted)
	}
}

func TestAnObjectWhoseLabelsGoIsTakenOut(t *testing.T) {
	k := NewKeeper()
	k.Saw("Service", object("shop", "web", "5", "ns1.cs1"))
	k.Saw("Service", object("shop", "web", "6", "")) // someone took the hub's labels away
	if got, wanted := printsOf(t, k, "ns1.cs1"), want("ns1.cs1", nil); !reflect.DeepEqual(got, wanted) {
		t.Fatalf("got %v, want %v", got, wanted)
	}
}

func TestADeleteTheInformerMissedIsTakenOut(t *testing.T) {
	k := NewKeeper()
	k.Saw("EndpointSlice", object("shop", "web-c1", "5", "ns1.cs1"))
	k.Saw("EndpointSlice", object("shop", "web-c2", "6", "ns1.cs1"))
	// A DeletedFinalStateUnknown's object may be anything the store had: the key counts.
	k.Gone("EndpointSlice", toolscache.DeletedFinalStateUnknown{Key: "shop/web-c1"})
	wanted := want("ns1.cs1", []printed{{"EndpointSlice", object("shop", "web-c2", "6", "ns1.cs1")}})
	if got := printsOf(t, k, "ns1.cs1"); !reflect.DeepEqual(got, wanted) {
		t.Fatalf("got %v, want %v", got, wanted)
	}
}

func TestAnotherClusterSetsObjectsHaveTheirOwnEntries(t *testing.T) {
	k := NewKeeper()
	k.Saw("ServiceImport", object("shop", "web", "5", "ns1.cs1"))
	k.Saw("ServiceImport", object("shop", "db", "6", "ns2.old"))
	got := printsOf(t, k, "ns1.cs1")
	var sets []string
	for _, p := range got {
		if p.Kind == "ServiceImport" {
			sets = append(sets, p.ClusterSet)
			if p.Count != 1 {
				t.Errorf("%s: count %d, want 1", p.ClusterSet, p.Count)
			}
		}
	}
	if !slices.Equal(sets, []string{"ns1.cs1", "ns2.old"}) {
		t.Fatalf("ServiceImport entries for %v, want ns1.cs1 and ns2.old: %v", sets, got)
	}
	// Once the member holds nothing of it, another ClusterSet is no longer reported;
	// the member's own always is.
	k.Gone("ServiceImport", object("shop", "db", "7", "ns2.old"))
	k.Gone("ServiceImport", object("shop", "web", "8", "ns1.cs1"))
	if got, wanted := printsOf(t, k, "ns1.cs1"), want("ns1.cs1", nil); !reflect.DeepEqual(got, wanted) {
		t.Fatalf("got %v, want %v", got, wanted)
	}
}

// TestTheSumFollowsWhatTheHubWrote: a new resourceVersion alone (strait dns's own
// clusterset-IP write, a status write) leaves a Service's sum as it was; another digest
// from the hub changes it.
func TestTheSumFollowsWhatTheHubWrote(t *testing.T) {
	k := NewKeeper()
	k.Saw("Service", object("shop", "web", "5", "ns1.cs1"))
	before := printsOf(t, k, "ns1.cs1")
	k.Saw("Service", object("shop", "web", "9", "ns1.cs1"))
	if after := printsOf(t, k, "ns1.cs1"); !reflect.DeepEqual(before, after) {
		t.Fatalf("a new resourceVersion alone changed the sum: %v, then %v", before, after)
	}
	rewritten := object("shop", "web", "10", "ns1.cs1")
	rewritten.Annotations = map[string]string{straitv1.AnnotationDigest: "0123456789abcdef"}
	k.Saw("Service", rewritten)
	after := printsOf(t, k, "ns1.cs1")
	if reflect.DeepEqual(before, after) {
		t.Fatal("the sum stayed the same over a new digest")
	}
	if wanted := want("ns1.cs1", []printed{{"Service", rewritten}}); !reflect.DeepEqual(after, wanted) {
		t.Fatalf("got %v, want %v", after, wanted)
	}
}

func TestTheMembersOwnClusterSetIsReportedHoldingNothing(t *testing.T) {
	got := printsOf(t, NewKeeper(), "ns1.cs1")
	if len(got) != len(memberprint.ReportedKinds()) {
		t.Fatalf("got %v, want one entry a kind", got)
	}
	for _, p := range got {
		if p.ClusterSet != "ns1.cs1" || p.Count != 0 || p.Sum != memberprint.FormatSum(0) {
			t.Errorf("got %+v, want ns1.cs1 with count 0", p)
		}
	}
	if got := printsOf(t, NewKeeper(), ""); len(got) != 0 {
		t.Errorf("a Membership without a ClusterSet, nothing held: got %v", got)
	}
}

func TestTheReportKeepsToTheCRDsLimitAndTheOwnClusterSet(t *testing.T) {
	k := NewKeeper()
	for i := range 30 {
		k.Saw("Service", object("shop", fmt.Sprintf("s%d", i), "1", fmt.Sprintf("ns.a%02d", i)))
	}
	got, omitted := k.Report("ns.z")
	if len(got) > MaxPrints || omitted != 31-MaxPrints/len(memberprint.ReportedKinds()) {
		t.Fatalf("%d entries, %d left out", len(got), omitted)
	}
	if !slices.ContainsFunc(got, func(p straitv1.MemberPrint) bool { return p.ClusterSet == "ns.z" }) {
		t.Error("the member's own ClusterSet was left out")
	}
	if !slices.IsSortedFunc(got, compare) {
		t.Error("not sorted")
	}
}

func TestEqualIgnoresOrder(t *testing.T) {
	a := []straitv1.MemberPrint{{ClusterSet: "a", Kind: "Service"}, {ClusterSet: "b", Kind: "Service"}}
	b := []straitv1.MemberPrint{a[1], a[0]}
	if !Equal(a, b) || Equal(a, a[:1]) {
		t.Error("Equal")
	}
}
