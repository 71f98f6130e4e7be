package labtest

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/require"
)

// TestIPerf3TellsABlackHoleFromAPath: one stream between two namespaces completes with
// every half-second carrying data; once full-sized packets vanish on the way (a path
// MTU below the link's, its ICMP lost: what a wrong MTU under a tunnel does), the same
// run fails or shows a half-second without a byte, within its timeout.
func TestIPerf3TellsABlackHoleFromAPath(t *testing.T) {
	require.Root(t, "iperf3", "nft", "nsenter")
	client, server := netns.New(t, "iperfc"), netns.New(t, "iperfs")
	netns.Veth(t, client, "eth0", server, "eth0")
	client.AddAddr(t, "eth0", "10.77.0.1/24")
	server.AddAddr(t, "eth0", "10.77.0.2/24")
	ctx, cancel := context.WithCancel(context.Background())
	srv := server.Command(ctx, "iperf3", "-s", "-p", strconv.Itoa(workload.IPerf3Port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = srv.Wait() })
	require.Eventually(t, 5*time.Second, "the iperf3 server listening", func() error {
		c, err := netns.Dial(context.Background(), client.Name, "tcp", "10.77.0.2:"+strconv.Itoa(workload.IPerf3Port))
		if err == nil {
			c.Close()
		}
		return err
	})
	// The server closes a control connection that sends no test; let it go back to waiting.
	time.Sleep(200 * time.Millisecond)

	r, err := IPerf3(client.Name, "10.77.0.2", 2, 0, 15*time.Second)
	if err != nil || r.SlowestInterval <= 0 || r.Bytes <= 0 {
		t.Fatalf("a clear path: %+v, %v; want every interval carrying data", r, err)
	}
	t.Logf("a clear path: %.0f Mbit/s, slowest half-second %.0f Mbit/s", r.BitsPerSecond/1e6, r.SlowestInterval/1e6)

	if out, err := exec.Command("ip", "netns", "exec", server.Name, "nft", "add table ip blackhole; add chain ip blackhole in { type filter hook input priority 0; }; add rule ip blackhole in ip length > 1400 drop").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	start := time.Now()
	r, err = IPerf3(client.Name, "10.77.0.2", 2, 0, 10*time.Second)
	t.Logf("a black hole: %+v, %v after %s", r, err, time.Since(start).Round(time.Millisecond))
	if err == nil && r.SlowestInterval > 0 {
		t.Errorf("a black hole for full-sized packets: %+v, no error and no stalled interval", r)
	}
}
