package plan

import (
	"net/netip"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Global CIDRs: a pin from git first, then what a member holds while it is free and of
// the cluster size, then the lowest free blocks in name order, and an error that names
// the cluster and the range once the range is full.
func TestGlobalCIDRsKeepPinsAndHoldingsAndFillTheRest(t *testing.T) {
	spec := &straitv1.ClusterSetSpec{Globalnet: &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "242.0.0.0/24", ClusterSize: 64}}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		spec.Clusters = append(spec.Clusters, straitv1.ClusterSpec{Name: n})
	}
	spec.Clusters[0].GlobalCIDR = "242.0.0.128/26"
	held := map[string]netip.Prefix{
		"b": netip.MustParsePrefix("242.0.0.0/26"),
		"c": netip.MustParsePrefix("242.0.0.128/26"), // a's pin: c moves
		"d": netip.MustParsePrefix("242.0.0.64/27"),  // not of the cluster size
	}
	got, errs := allocateGlobalCIDRs(spec, held)
	want := map[string]string{"a": "242.0.0.128/26", "b": "242.0.0.0/26", "c": "242.0.0.64/26", "d": "242.0.0.192/26"}
	for n, w := range want {
		if got[n].String() != w {
			t.Errorf("cluster %s got %s, want %s", n, got[n], w)
		}
	}
	if len(errs) != 1 || errs[0].Field != "spec.globalnet.cidrRange" || !strings.Contains(errs[0].Error(), "cluster e") {
		t.Fatalf("errors %v, want one on spec.globalnet.cidrRange for cluster e", errs)
	}
	if _, ok := got["e"]; ok {
		t.Errorf("cluster e got %s from a full range", got["e"])
	}
}
