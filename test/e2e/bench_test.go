package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// iperfSeconds is how long each iperf3 run measures, after iperfOmit seconds of TCP
// slow start and warm-up it leaves out (iperf3 -t 10 -O 2).
const (
	iperfSeconds = 10
	iperfOmit    = 2
)

// BenchmarkCableThroughput: one TCP stream (iperf3) from a c1 pod on a plain node to a c2
// pod on a plain node through each cable driver (vx-strait, the gateways, the cable),
// against the raw routed path in the same lab (the same client to a c1 pod on another
// node, host-gw), alternating so both see the same load. Reported per driver: the
// medians in Gbit/s, the median of the per-round ratio cable/raw with its smallest and
// largest round, and the machine's CPU-seconds per GB moved on each path (every process
// and the kernel: both iperf3 ends, both tunnel ends and the forwarding, all on this one
// machine). One sub-benchmark per driver (-bench CableThroughput/wireguard). With
// STRAIT_BENCH_PERF=<dir>, the first cable round of each driver runs under
// `perf record -a -g` into <dir>/<driver>.perf.data (perf is the Debian package
// linux-perf, which neither .ci/run nor make installs: only this opt-in needs it; that
// round's CPU-s per GB then includes perf's own work).
func BenchmarkCableThroughput(b *testing.B) {
	env.Require(b)
	env.RestoreClusterSetSpec(b)
	env.EnsurePSKSecret(b)
	client := env.SourcePods(b, "c1")[0]
	local := env.PodOn(b, "c1", env.NodeOfKind(b, "c1", true), labtest.IPerf3Image).Status.PodIP
	remote := env.PodOn(b, "c2", env.NodeOfKind(b, "c2", false), labtest.IPerf3Image).Status.PodIP
	for _, driver := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN} {
		b.Run(string(driver), func(b *testing.B) {
			benchCable(b, driver, client.NS, local, remote, os.Getenv("STRAIT_BENCH_PERF"))
		})
	}
}

// benchCable switches the ClusterSet to driver and measures b.N rounds of raw (to local)
// and cable (to remote) throughput from the pod in network namespace ns.
func benchCable(b *testing.B, driver straitv1.CableDriver, ns, local, remote, perfDir string) {
	if err := env.UpdateClusterSet(b, func(cs *straitv1.ClusterSet) { labtest.SetDriver(cs, driver) }); err != nil {
		b.Fatal(err)
	}
	for _, cluster := range members() {
		env.WaitActiveGateway(b, cluster, driver)
	}
	require.Eventually(b, labtest.SwitchTimeout, "iperf3 over "+string(driver), func() error {
		_, err := iperf(ns, remote, iperfRun{seconds: 1})
		return err
	})
	var raw, cable []iperfResult
	var ratio []float64
	for i := range b.N {
		r, err := iperf(ns, local, iperfRun{seconds: iperfSeconds, omit: iperfOmit})
		if err != nil {
			b.Fatal(err)
		}
		run := iperfRun{seconds: iperfSeconds, omit: iperfOmit}
		if perfDir != "" && i == 0 {
			run.perf = filepath.Join(perfDir, string(driver)+".perf.data")
		}
		c, err := iperf(ns, remote, run)
		if err != nil {
			b.Fatal(err)
		}
		raw, cable, ratio = append(raw, r), append(cable, c), append(ratio, c.gbps/r.gbps)
	}
	b.ReportMetric(median(gbps(raw)), "raw-Gbit/s")
	b.ReportMetric(median(gbps(cable)), "cable-Gbit/s")
	b.ReportMetric(median(ratio), "cable/raw")
	b.ReportMetric(slices.Min(ratio), "cable/raw-min")
	b.ReportMetric(slices.Max(ratio), "cable/raw-max")
	b.ReportMetric(median(cpuPerGB(raw)), "raw-cpu-s/GB")
	b.ReportMetric(median(cpuPerGB(cable)), "cable-cpu-s/GB")
	b.ReportMetric(0, "ns/op") // ten-second runs: the wall time says nothing
}

// iperfRun is one iperf3 client run: seconds measured after omit seconds left out, and
// a perf.data path to record the whole machine into while it measures ("": none).
type iperfRun struct {
	seconds, omit int
	perf          string
}

// iperfResult is what a run measured: the received Gbit/s, and the machine's busy
// CPU-seconds over the measured seconds per GB received.
type iperfResult struct {
	gbps, cpuPerGB float64
}

func gbps(rs []iperfResult) []float64 {
	return project(rs, func(r iperfResult) float64 { return r.gbps })
}
func cpuPerGB(rs []iperfResult) []float64 {
	return project(rs, func(r iperfResult) float64 { return r.cpuPerGB })
}

func project(rs []iperfResult, f func(iperfResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// iperf runs one iperf3 client in network namespace ns against server and counts the
// machine's CPU from the end of the omitted seconds to the end of the run.
func iperf(ns, server string, run iperfRun) (iperfResult, error) {
	c, err := labtest.StartIPerf3(ns, server, run.seconds, run.omit, time.Duration(run.seconds+run.omit+30)*time.Second)
	if err != nil {
		return iperfResult{}, err
	}
	time.Sleep(time.Duration(run.omit) * time.Second)
	busy0, cpuErr := busyCPUSeconds()
	var perf *exec.Cmd
	if run.perf != "" {
		perf = exec.Command("perf", "record", "-a", "-g", "-o", run.perf, "--", "sleep", strconv.Itoa(run.seconds-1))
		perf.Stdout, perf.Stderr = io.Discard, io.Discard
		if err := perf.Start(); err != nil {
			perf = nil
			cpuErr = errors.Join(cpuErr, fmt.Errorf("perf record: %w", err))
		}
	}
	got, err := c.Wait()
	busy1, err1 := busyCPUSeconds()
	if perf != nil {
		cpuErr = errors.Join(cpuErr, perf.Wait())
	}
	if err != nil {
		return iperfResult{}, err
	}
	if cpuErr = errors.Join(cpuErr, err1); cpuErr != nil {
		return iperfResult{}, cpuErr
	}
	return iperfResult{gbps: got.BitsPerSecond / 1e9, cpuPerGB: (busy1 - busy0) / (got.Bytes / 1e9)}, nil
}

// busyCPUSeconds is the machine's CPU time spent on anything but idling and waiting for
// I/O since boot, from /proc/stat, in seconds.
func busyCPUSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseBusy(string(b))
}

// parseBusy reads the aggregate "cpu" line of /proc/stat: user nice system idle iowait
// irq softirq steal …, in USER_HZ (100 per second on Linux).
func parseBusy(stat string) (float64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy float64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue // idle, iowait
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		busy += n
	}
	return busy / 100, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
