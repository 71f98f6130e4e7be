package probe

import (
	"context"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// TestBenchmarkMeasuresThePath: two namespaces on a veth, a benchmark server in one. The
// throughput the client measures follows what the kernel lets through: far above 50
// Mbit/s on the bare veth, at most that with a token bucket of 50 Mbit/s on the client's
// side. Round trips of small messages are timed and summarised in order.
func TestBenchmarkMeasuresThePath(t *testing.T) {
	require.Root(t, "tc")
	client, server := netns.New(t, "bcli"), netns.New(t, "bsrv")
	netns.Veth(t, client, "eth0", server, "eth0")
	client.AddAddr(t, "eth0", "198.51.100.1/24")
	server.AddAddr(t, "eth0", "198.51.100.2/24")
	addr := "198.51.100.2:4244"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- server.Do(func() error { return ServeBench(ctx, addr) }) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	measure := func() Throughput {
		t.Helper()
		var tp Throughput
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if err = client.Do(func() error { tp, err = MeasureThroughput(ctx, addr, time.Second, time.Second); return err }); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	bare := measure()
	t.Logf("bare veth: %+v (%.0f Mbit/s)", bare, bare.BitsPerSecond/1e6)
	if bare.BitsPerSecond < 200e6 || bare.Seconds < 0.5 || bare.Seconds > 2 {
		t.Errorf("the bare veth: %+v; want over 200 Mbit/s measured over about a second", bare)
	}
	if _, err := netns.Exec(ctx, client.Name, "", "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "50mbit", "burst", "32kbit", "latency", "50ms"); err != nil {
		t.Fatal(err)
	}
	limited := measure()
	t.Logf("50 Mbit/s token bucket: %+v (%.1f Mbit/s)", limited, limited.BitsPerSecond/1e6)
	if limited.BitsPerSecond > 55e6 || limited.BitsPerSecond < 25e6 {
		t.Errorf("a 50 Mbit/s token bucket: %.1f Mbit/s measured; want at most 55 and more than 25", limited.BitsPerSecond/1e6)
	}

	var l Latency
	err := client.Do(func() (err error) { l, err = MeasureLatency(ctx, addr, 100, time.Second); return err })
	t.Logf("latency: %+v", l)
	if err != nil || l.Count != 100 || l.Min <= 0 || l.Min > l.P50 || l.P50 > l.P99 || l.P99 > l.Max || l.Avg < l.Min || l.Avg > l.Max {
		t.Errorf("100 round trips: %+v, %v; want 100 timed, min ≤ p50 ≤ p99 ≤ max, the average between", l, err)
	}
}

// The percentiles are nearest ranks: of 1..100 µs, the median is 50 and the 99th 99.
func TestSummariseRTTs(t *testing.T) {
	rtts := make([]float64, 100)
	for i := range rtts {
		rtts[i] = float64(100 - i)
	}
	got := summariseRTTs(rtts)
	if want := (Latency{Count: 100, Min: 1, Avg: 50.5, P50: 50, P99: 99, Max: 100}); got != want {
		t.Errorf("summariseRTTs(100..1) = %+v, want %+v", got, want)
	}
	if got := summariseRTTs([]float64{7}); got.P50 != 7 || got.P99 != 7 {
		t.Errorf("one round trip: %+v", got)
	}
}
