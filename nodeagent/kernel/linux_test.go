package kernel

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// newLinuxInNetns is a Linux kernel in a fresh namespace with an underlay eth0 at
// 10.0.0.1/24 (a veth to a second namespace).
func newLinuxInNetns(t *testing.T) Kernel {
	t.Helper()
	require.Root(t)
	node, peer := netns.New(t, "node"), netns.New(t, "peer")
	netns.Veth(t, node, "eth0", peer, "eth0")
	node.AddAddr(t, "eth0", "10.0.0.1/24")
	node.AddAddr(t, "eth0", "2001:db8::1/64")
	k, err := NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

func TestLinuxSequence(t *testing.T) {
	runSequence(t, newLinuxInNetns)
}

func TestLinuxCleanupLeavesNothing(t *testing.T) {
	ctx := context.Background()
	for _, s := range []step{steps()[2], ipv6Steps()[0], ipv6Steps()[1]} {
		k := newLinuxInNetns(t)
		if err := Apply(ctx, k, testOwn, s.want); err != nil {
			t.Fatal(err)
		}
		if err := Cleanup(ctx, k, testOwn); err != nil {
			t.Fatal(err)
		}
		if d, err := Dump(ctx, k, testOwn); err != nil || d != "" {
			t.Fatalf("%s: after cleanup: %q, %v", s.name, d, err)
		}
		// Cleanup of nothing is no error either.
		if err := Cleanup(ctx, k, testOwn); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkLinuxMapElements programs 10,000 global IP mappings into an nftables map (one
// transaction, chunked), the globalnet worst case from the issue.
func BenchmarkLinuxMapElements(b *testing.B) {
	require.Root(b)
	ctx := context.Background()
	ns := netns.New(b, "bench")
	k, err := NewLinux(ns.Handle)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	const n = 10000
	mapped := map[string]string{}
	for i := range n {
		mapped[fmt.Sprintf("242.1.%d.%d", i/256, i%256)] = fmt.Sprintf("10.7.%d.%d", i/256, i%256)
	}
	want := State{NFT: table([]string{"10.8.0.0/16"}, mapped, lookupRule("remote"))}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := Apply(ctx, k, testOwn, want); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/10k-mappings")
		b.StopTimer()
		if err := Cleanup(ctx, k, testOwn); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestLinuxWatchReportsChangesBehindOurBack: deleting our device or one of our routes
// from outside triggers a resync, and Apply then restores the state.
func TestLinuxWatchReportsChangesBehindOurBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := newLinuxInNetns(t).(*Linux)
	want := steps()[1].want
	if err := Apply(ctx, k, testOwn, want); err != nil {
		t.Fatal(err)
	}
	before, _ := Dump(ctx, k, testOwn)
	changed := make(chan struct{}, 100)
	if err := k.Watch(ctx, testOwn.Protocol, func() { changed <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for {
			select {
			case <-changed:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	for _, breakIt := range []func() error{
		func() error { return k.DeleteRoute(ctx, want.Routes[0]) },
		func() error { return k.DeleteLink(ctx, "vx-test") },
	} {
		drain()
		if err := breakIt(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
			t.Fatal("no event after a change behind our back")
		}
		if err := Apply(ctx, k, testOwn, want); err != nil {
			t.Fatal(err)
		}
		if after, _ := Dump(ctx, k, testOwn); after != before {
			t.Fatalf("not restored:\n%s\nwant:\n%s", after, before)
		}
	}
}

// TestSysctlsUnderAnotherProcSys: in a container that is not privileged /proc/sys is
// read-only and the node's /proc/sys/net is mounted elsewhere (the DaemonSet's
// /host/proc/sys/net): the kernel reads and writes sysctls there once told so.
func TestSysctlsUnderAnotherProcSys(t *testing.T) {
	dir := t.TempDir()
	key := "net/ipv4/conf/vx-strait/rp_filter"
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(key)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := NewLinux(vnetns.None())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k.UseProcSys(dir)
	ctx := context.Background()
	if v, err := k.Sysctl(ctx, key); err != nil || v != "1" {
		t.Fatalf("Sysctl(%s) = %q, %v; want 1 from %s", key, v, err, dir)
	}
	if err := k.SetSysctl(ctx, key, "2"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, key)); string(b) != "2" {
		t.Fatalf("%s holds %q after SetSysctl 2", filepath.Join(dir, key), b)
	}
}

// TestLinuxMACAndNeighborSetInPlace: a vx-strait made by an agent without derived MACs
// (the kernel's random one, a neighbor the kernel resolved to a gateway's old MAC) gets
// the derived MAC and a permanent neighbor entry in place: the device is not made
// again, and the resolved entry is replaced, not left beside ours.
func TestLinuxMACAndNeighborSetInPlace(t *testing.T) {
	ctx := context.Background()
	k := newLinuxInNetns(t).(*Linux)
	want := steps()[1].want
	old := want
	old.Links = []Link{want.Links[0]}
	old.Links[0].MAC, old.Links[0].Neighbors = "", nil
	if err := Apply(ctx, k, testOwn, old); err != nil {
		t.Fatal(err)
	}
	lk, err := k.nl.LinkByName("vx-test")
	if err != nil {
		t.Fatal(err)
	}
	if got := lk.Attrs().HardwareAddr.String(); got == want.Links[0].MAC {
		t.Fatalf("the kernel picked the derived MAC %s itself", got)
	}
	resolved := &netlink.Neigh{LinkIndex: lk.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_REACHABLE,
		IP: net.ParseIP("241.0.0.2"), HardwareAddr: net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}}
	if err := k.nl.NeighSet(resolved); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, k, testOwn, want); err != nil {
		t.Fatal(err)
	}
	after, err := k.nl.LinkByName("vx-test")
	if err != nil {
		t.Fatal(err)
	}
	if after.Attrs().Index != lk.Attrs().Index {
		t.Errorf("vx-test was made again (index %d, was %d)", after.Attrs().Index, lk.Attrs().Index)
	}
	if got := after.Attrs().HardwareAddr.String(); got != want.Links[0].MAC {
		t.Errorf("MAC %s, want %s", got, want.Links[0].MAC)
	}
	neighs, err := k.nl.NeighList(after.Attrs().Index, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range neighs {
		got = append(got, fmt.Sprintf("%s %s permanent=%v", n.IP, n.HardwareAddr, n.State&netlink.NUD_PERMANENT != 0))
	}
	if w := []string{"241.0.0.2 0a:73:0a:00:00:02 permanent=true"}; !slices.Equal(got, w) {
		t.Errorf("neighbors %q, want %q", got, w)
	}
	if err := Apply(ctx, k, testOwn, want); err != nil {
		t.Fatal(err)
	}
}

// TestLinuxWatchSurvivesALostSubscription: a burst of changes while the agent is busy
// overflows the netlink socket (ENOBUFS), which ends the subscription. The watch then
// subscribes again and asks for one resync, instead of reading on from the closed
// channels, which took most of a core on the active gateway of 254 peers; and a change
// behind our back after that is still reported.
func TestLinuxWatchSurvivesALostSubscription(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := newLinuxInNetns(t).(*Linux)
	own := Route{Table: testOwn.Table, Protocol: testOwn.Protocol, Dst: netip.MustParsePrefix("10.9.0.0/24"), Dev: "eth0"}
	if err := k.ReplaceRoute(ctx, own); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	busy := make(chan struct{})
	if err := k.Watch(ctx, testOwn.Protocol, func() {
		if calls.Add(1) == 1 {
			<-busy // the first pass takes its time: nobody reads the socket meanwhile
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := k.AddAddr(ctx, "eth0", netip.MustParsePrefix("10.0.0.5/32")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Far more route messages than the socket's default buffer holds.
	for i := range 4000 {
		r := Route{Table: testOwn.Table, Dst: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 100, byte(i / 256), byte(i % 256)}), 32), Dev: "eth0"}
		if err := k.ReplaceRoute(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	close(busy)
	time.Sleep(time.Second)
	if k.lostWatches.Load() == 0 {
		t.Fatal("4,000 route changes did not overflow the subscription: the test proves nothing")
	}
	// Nothing changes now: the watch must cost (next to) nothing. Reading on from a
	// closed channel spins, with or without calls of changed.
	before, cpu := calls.Load(), cpuTime(t)
	time.Sleep(time.Second)
	if n := calls.Load() - before; n > 10 {
		t.Fatalf("%d calls of changed in the second after the burst, with nothing changing", n)
	}
	if used := cpuTime(t) - cpu; used > 200*time.Millisecond {
		t.Fatalf("the watch used %v of CPU in the second after the burst, with nothing changing", used)
	}
	if err := k.DeleteRoute(ctx, own); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Second)
	for calls.Load() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if calls.Load() == before {
		t.Fatal("no call after one of our routes was deleted behind our back, once the subscription was made again")
	}
	t.Logf("subscriptions lost and made again: %d; calls: %d", k.lostWatches.Load(), calls.Load())
}

// cpuTime is the CPU time this process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLinuxIPv6OnAHostThatDisablesItOnNewDevices: where new devices come without IPv6
// (net.ipv6.conf.default.disable_ipv6=1), the device Apply makes gets its disable_ipv6=0
// before its IPv6 addresses, so the first pass converges.
func TestLinuxIPv6OnAHostThatDisablesItOnNewDevices(t *testing.T) {
	ctx := context.Background()
	require.Root(t)
	node, peer := netns.New(t, "node"), netns.New(t, "peer")
	netns.Veth(t, node, "eth0", peer, "eth0")
	node.AddAddr(t, "eth0", "10.0.0.1/24")
	if err := node.SetSysctl("net/ipv6/conf/default/disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	k, err := NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	s := ipv6Steps()[0]
	s.want.Sysctls = map[string]string{"net/ipv4/conf/vx-test/rp_filter": "2", "net/ipv6/conf/vx-test/disable_ipv6": "0"}
	if err := Apply(ctx, k, testOwn, s.want); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	if d, _ := Dump(ctx, k, testOwn); d != s.dump {
		t.Fatalf("got:\n%s\nwant:\n%s", d, s.dump)
	}
}
