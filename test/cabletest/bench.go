package cabletest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/straitnet/strait/test/require"
)

// iperfSeconds is how long each iperf3 run sends.
const iperfSeconds = 4

// Throughput measures one TCP stream, pod a → pod b, with iperf3 over the raw routed path
// (the gateways route the remote pod CIDR straight to each other over the WAN) and
// through the driver's cable, alternating b.N times in the same lab, and reports the
// medians of both and of the per-round ratio.
func Throughput(b *testing.B, s Suite) {
	require.Root(b, "ping", "iperf3")
	lab := NewLab(b)
	server := exec.Command("ip", "netns", "exec", lab.B.PodNS, "iperf3", "-s", "-B", lab.B.PodIP.String())
	if err := server.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })

	// The raw path lives in a table of its own behind a rule that takes precedence over
	// Strait's while it is in place, so raw and cable runs can alternate with the cable up
	// and both see the same machine load.
	const rawTable, rawPref = Table + 1, rulePref - 1
	for _, r := range []struct {
		ns, dst, via string
	}{{lab.A.GatewayNS, lab.B.CIDR.String(), lab.B.WANIP.String()}, {lab.B.GatewayNS, lab.A.CIDR.String(), lab.A.WANIP.String()}} {
		MustRun(b, "ip", "-n", r.ns, "route", "add", r.dst, "via", r.via, "table", fmt.Sprint(rawTable))
	}
	rawPath := func(on bool) {
		op := "del"
		if on {
			op = "add"
		}
		for _, ns := range []string{lab.A.GatewayNS, lab.B.GatewayNS} {
			MustRun(b, "ip", "-n", ns, "rule", op, "pref", fmt.Sprint(rawPref), "lookup", fmt.Sprint(rawTable))
		}
	}

	a, bb := &site{Site: lab.A}, &site{Site: lab.B}
	for _, x := range []*site{a, bb} {
		if s.Setup != nil {
			x.env, x.stop = s.Setup(b, lab, x.Site)
		}
		x.gw = StartGateway(b, x.GatewayNS, x.env...)
		var err error
		if x.key, err = x.gw.PublicKey(); err != nil {
			b.Fatal(err)
		}
	}
	resync := func() {
		if err := a.gw.Converge(a.Local(s.Port, s.PSK), bb.Remote(s.Port, bb.key)); err != nil {
			b.Fatal(err)
		}
		if err := bb.gw.Converge(bb.Local(s.Port, s.PSK), a.Remote(s.Port, a.key)); err != nil {
			b.Fatal(err)
		}
	}
	resync()
	last := time.Now()
	require.Eventually(b, s.ConnectTimeout, "pod a → pod b", func() error {
		err := Ping(lab.A.PodNS, lab.B.PodIP)
		if err != nil && time.Since(last) > resyncPeriod {
			resync()
			last = time.Now()
		}
		return err
	})
	var rawBps, cableBps, ratios []float64
	for range b.N {
		rawPath(true)
		bps, err := iperf(b, "raw path", lab)
		if err != nil {
			b.Fatalf("raw path: %v", err)
		}
		rawBps = append(rawBps, bps)
		rawPath(false)
		cbps, err := iperf(b, "through the cable", lab)
		if err != nil {
			b.Fatalf("through the cable: %v", err)
		}
		cableBps = append(cableBps, cbps)
		ratios = append(ratios, cbps/bps)
		b.Logf("round %d: raw %.2f Gbit/s, cable %.2f Gbit/s, ratio %.3f", len(ratios), bps/1e9, cbps/1e9, cbps/bps)
	}
	for _, x := range []*site{a, bb} {
		if _, err := x.gw.Cleanup(); err != nil {
			b.Error(err)
		}
		_ = x.gw.Exit()
		if x.stop != nil {
			x.stop()
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(rawBps)/1e9, "raw-Gbit/s")
	b.ReportMetric(median(cableBps)/1e9, "cable-Gbit/s")
	b.ReportMetric(median(ratios), "cable/raw")
}

// median of xs; the machine is shared, and a median shrugs off the odd starved run.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// iperf runs one iperf3 client in pod a against the server in pod b and returns the
// received bits per second (retrying while the server is not yet listening).
func iperf(b testing.TB, what string, lab *Lab) (float64, error) {
	var out []byte
	require.Eventually(b, 5*time.Second, what+": iperf3", func() error {
		var err error
		out, err = exec.Command("ip", "netns", "exec", lab.A.PodNS, "iperf3", "-J",
			"-c", lab.B.PodIP.String(), "-t", fmt.Sprint(iperfSeconds)).Output()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("iperf3 output: %w", err)
	}
	if res.Error != "" || res.End.SumReceived.BitsPerSecond == 0 {
		return 0, fmt.Errorf("iperf3: %s", res.Error)
	}
	return res.End.SumReceived.BitsPerSecond, nil
}
