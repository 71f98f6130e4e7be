package controllers

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
)

// Which members the hub passes over, on in-memory members: a fast table beside the
// envtest tests (skip_test.go) that show it through real API servers.
func TestWhichMembersArePassedOver(t *testing.T) {
	ctx := context.Background()
	cs, obs := bigset.New(6, 60)
	h := newScaleHub(t, cs)
	label := plan.ClusterSetLabel(types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name})
	passes := func() map[string]float64 {
		out := map[string]float64{}
		for i := range 6 {
			out[bigset.Name(i)] = testutil.ToFloat64(h.r.metrics.memberPasses.WithLabelValues(label, bigset.Name(i)))
		}
		return out
	}
	step := func(name string, change func(), wantWrites bool, want ...string) {
		t.Helper()
		before := passes()
		change()
		writes := h.reconcile(ctx, cs, obs)
		after := passes()
		passed := map[string]bool{}
		for _, c := range want {
			passed[c] = true
		}
		for c := range after {
			if got := after[c] > before[c]; got != passed[c] {
				t.Errorf("%s: %s passed over = %v, want %v", name, c, got, passed[c])
			}
		}
		if (writes > 0) != wantWrites {
			t.Errorf("%s: %d writes", name, writes)
		}
	}
	all := []string{"c000", "c001", "c002", "c003", "c004", "c005"}
	nothing := func() {}
	step("first reconcile", nothing, true, all...)
	step("nothing changed", nothing, false)
	step("a new cluster IP in c001 (globalnet)", func() { bigset.ChangeServiceIP(obs, 1, "10.1.255.1") }, true, "c001")
	step("a gateway of c002 moved: every other member's Peer", func() { bigset.MoveGateway(obs, 2, "198.51.100.2") }, true,
		"c000", "c001", "c003", "c004", "c005")
	gone := cs.Spec.Exports[5]
	goneImport := objKey{kind: "ServiceImport", namespace: gone.Namespace, name: gone.Name}
	fullAt := h.r.appliedFor(h.conns["c000"].member.Key).pass.at
	step("an export removed: every member drops its import", func() { cs.Spec.Exports = append(cs.Spec.Exports[:5:5], cs.Spec.Exports[6:]...) },
		true, all...)
	for c, m := range h.members {
		if _, ok := m.objs["ServiceImport"][goneImport]; ok {
			t.Errorf("%s still holds the import of the removed export", c)
		}
		if inv := h.r.appliedFor(h.conns[c].member.Key).pass.inventory["ServiceImport"]; inv != 59 {
			t.Errorf("%s: inventory says %d ServiceImports, want 59", c, inv)
		}
	}
	if at := h.r.appliedFor(h.conns["c000"].member.Key).pass.at; !at.Equal(fullAt) {
		t.Error("the removal made a full pass over c000; only the export's objects needed one")
	}
	peer := objKey{kind: "Peer", namespace: straitv1.SystemNamespace, name: "c000"}
	step("an object in c003 changed unseen", func() { h.members["c003"].touch(peer) }, false)
	step("the watch saw someone change c003's objects", func() {
		h.r.appliedFor(h.conns["c003"].member.Key).changedByOthers()
	}, true, "c003")
	step("c004 reconnected (a new connection)", func() {
		old := h.conns["c004"].member
		h.conns["c004"].member = &members.Member{Key: old.Key, Client: old.Client, Reader: old.Reader, Prints: old.Prints}
	}, false, "c004")
	step("c005 removed and added back", func() {
		h.conns["c005"].removed = true
		h.r.writeMembers(ctx, cs, nil, map[string]*conn{"c005": h.conns["c005"]})
		h.conns["c005"].removed = false
	}, true, "c005")
	h.members["c005"].touch(peer)
	h.resyncAlways()
	step("the resync", nothing, true, all...)
	h.resyncAlways()
	step("after the resync", nothing, false)
	// The resync checks members whose inputs did not change against the hub's record
	// rather than rebuilding their objects: it finds what changed unseen, and writes
	// nothing where nothing did.
	h.resyncAlways()
	step("the resync, nothing changed", nothing, false, all...)
	h.resyncAlways()
	h.members["c002"].remove(peer)
	step("an object in c002 deleted unseen", nothing, false)
	h.resyncAlways()
	step("the resync puts it back", nothing, true, all...)
	h.resyncAlways()
	if _, ok := h.members["c002"].objs["Peer"][peer]; !ok {
		t.Error("the resync did not put c002's deleted Peer back")
	}
}
