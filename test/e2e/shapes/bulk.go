package shapes

import (
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// A bulk transfer: one TCP stream for bulkSeconds after bulkOmit seconds of slow start,
// given bulkTimeout in all (a black hole hangs iperf3's end of test).
const (
	bulkSeconds = 3
	bulkOmit    = 1
	bulkTimeout = 20 * time.Second
)

// CableFloorRatio is the least one TCP stream through the cable must carry, as a share
// of what the same pod sends to a pod on another node of its own cluster in the same
// run: the machine's load moves both (on the 2-core machine with wireguard-go, 875
// Mbit/s against 6.88 Gbit/s, 0.127, with the machine quiet; 43 Mbit/s against 1.6
// Gbit/s, 0.035, with the three-cluster lab saturating it, which failed an absolute
// floor of 100 Mbit/s). The floor is far under either and far over what a wrong MTU
// leaves (a black hole: nothing, or seconds-long stalls after every retransmission).
// How fast the cable is belongs to the benchmarks (BenchmarkCableThroughput).
const CableFloorRatio = 0.01

// BulkTransferHasNoBlackHole sends, in every direction of edges, one TCP stream
// (iperf3) from a pod on a plain node of the sending cluster to an iperf3 pod on a plain
// node of the receiving one, through the cable with the CNIs' MTU underneath (flannel's
// VXLAN takes 50 bytes off the pod's link), and from the same pod to one on a gateway
// node of its own cluster. Both must complete, with no stall of labtest.BlackHoleStall,
// and the cable above CableFloorRatio of the in-cluster path; it logs both throughputs,
// their ratio and any shorter stall.
func BulkTransferHasNoBlackHole(t *testing.T, env *labtest.Env, edges []Edge) {
	require.Root(t, "iperf3") // the client runs from the host, in the pod's namespace
	for _, e := range edges {
		from, to := e.From, e.To
		t.Run(e.String(), func(t *testing.T) {
			src := env.SourcePods(t, from)[0]
			remote := env.PodOn(t, to, env.NodeOfKind(t, to, false), labtest.IPerf3Image)
			local := env.PodOn(t, from, env.NodeOfKind(t, from, true), labtest.IPerf3Image)
			cable := bulk(t, fmt.Sprintf("%s → %s's pod %s (the cable)", src.Name, to, remote.Name), src.NS, remote.Status.PodIP)
			own := bulk(t, fmt.Sprintf("%s → %s's pod %s (in-cluster, across nodes)", src.Name, from, local.Name), src.NS, local.Status.PodIP)
			t.Logf("figure: iperf3 %s → %s: cable %.0f Mbit/s, in-cluster (%s) %.0f Mbit/s, ratio %.3f; pod MTU %d in %s, %d in %s",
				from, to, cable/1e6, from, own/1e6, cable/own,
				podMTU(t, src.NS), from, podMTU(t, env.PodNetNS(t, to, remote)), to)
			if cable < own*CableFloorRatio {
				t.Errorf("%s → %s through the cable: %.0f Mbit/s, want at least %.0f (%g of the in-cluster path's %.0f)",
					from, to, cable/1e6, own*CableFloorRatio/1e6, CableFloorRatio, own/1e6)
			}
		})
	}
}

// bulk is one bulk transfer from network namespace ns to an iperf3 server at server;
// it fails t when the transfer did not complete or stalled, and returns the bits per
// second received.
func bulk(t *testing.T, what, ns, server string) float64 {
	t.Helper()
	r, err := labtest.IPerf3(ns, server, bulkSeconds, bulkOmit, bulkTimeout)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return 0
	}
	switch {
	case r.LongestStall >= labtest.BlackHoleStall:
		t.Errorf("%s: stalled: %s with nothing sent (%.0f Mbit/s in all)", what, r.LongestStall, r.BitsPerSecond/1e6)
	case r.LongestStall > 0:
		t.Logf("%s: %s with nothing sent, under the %s of a black hole (%.0f Mbit/s in all)", what, r.LongestStall, labtest.BlackHoleStall, r.BitsPerSecond/1e6)
	}
	return r.BitsPerSecond
}

// podMTU is the MTU of a pod's eth0, as its CNI set it.
func podMTU(t *testing.T, ns string) int {
	t.Helper()
	var mtu int
	if err := netns.Do(ns, func() error {
		lk, err := netlink.LinkByName("eth0")
		if err == nil {
			mtu = lk.Attrs().MTU
		}
		return err
	}); err != nil {
		t.Errorf("the MTU of eth0 in %s: %v", ns, err)
	}
	return mtu
}
