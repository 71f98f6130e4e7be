package labtest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
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
	if err == nil && r.LongestStall < BlackHoleStall {
		t.Errorf("a black hole for full-sized packets: %+v, no error and no stall of %s", r, BlackHoleStall)
	}
}

// The longest stall is the longest run of measured half-seconds with nothing sent; the
// omitted slow start counts for nothing.
func TestIPerf3LongestStall(t *testing.T) {
	report := func(mbits ...float64) []byte {
		var in []string
		for i, m := range mbits {
			in = append(in, `{"sum":{"bits_per_second":`+strconv.FormatFloat(m*1e6, 'f', -1, 64)+`,"omitted":`+strconv.FormatBool(i == 0)+`}}`)
		}
		return []byte(`{"intervals":[` + strings.Join(in, ",") + `],"end":{"sum_received":{"bits_per_second":1e8,"bytes":1e6}}}`)
	}
	for _, c := range []struct {
		name  string
		mbits []float64
		want  time.Duration
	}{
		{"a clear path", []float64{0, 120, 90, 110, 100}, 0},
		{"one starved half-second", []float64{50, 120, 0, 110, 100}, IPerf3Interval},
		{"a black hole after its first window", []float64{100, 33, 0, 0, 0}, 3 * IPerf3Interval},
		{"two stalls, the longer counts", []float64{100, 0, 80, 0, 0}, 2 * IPerf3Interval},
	} {
		r, err := parseIPerf3("iperf3", report(c.mbits...))
		if err != nil || r.LongestStall != c.want {
			t.Errorf("%s %v: longest stall %s, %v; want %s", c.name, c.mbits, r.LongestStall, err, c.want)
		}
	}
}
