package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// iperfSeconds is how long each iperf3 run sends.
const iperfSeconds = 3

// BenchmarkCableThroughput: one TCP stream (iperf3) from a c1 pod on a plain node to a c2
// pod on a plain node through each cable driver (vx-strait, the gateways, the cable),
// against the raw routed path in the same lab (the same client to a c1 pod on another
// node, host-gw), alternating so both see the same load. Reported per driver: the
// medians in Gbit/s and the median of the per-round ratio cable/raw.
func BenchmarkCableThroughput(b *testing.B) {
	env.Require(b)
	env.RestoreClusterSetSpec(b)
	ensurePSKSecret(b)
	const iperfImage = "strait.io/lab/iperf3"
	client := sourcePods(b, "c1")[0]
	local := env.PodOn(b, "c1", nodeOfKind(b, "c1", true), iperfImage).Status.PodIP
	remote := env.PodOn(b, "c2", nodeOfKind(b, "c2", false), iperfImage).Status.PodIP
	for _, driver := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN} {
		if err := env.UpdateClusterSet(b, func(cs *straitv1.ClusterSet) { setDriver(cs, driver) }); err != nil {
			b.Fatal(err)
		}
		for _, cluster := range members() {
			waitActiveGateway(b, cluster, driver)
		}
		require.Eventually(b, switchTimeout, "iperf3 over "+string(driver), func() error {
			_, err := iperf(client.ns, remote)
			return err
		})
		var raw, cable, ratio []float64
		for range b.N {
			r, err := iperf(client.ns, local)
			if err != nil {
				b.Fatal(err)
			}
			c, err := iperf(client.ns, remote)
			if err != nil {
				b.Fatal(err)
			}
			raw, cable, ratio = append(raw, r), append(cable, c), append(ratio, c/r)
		}
		b.ReportMetric(median(raw), string(driver)+"-raw-Gbit/s")
		b.ReportMetric(median(cable), string(driver)+"-cable-Gbit/s")
		b.ReportMetric(median(ratio), string(driver)+"-cable/raw")
	}
}

// iperf runs one iperf3 client in network namespace ns (a real pod's /proc/<pid>/ns/net,
// which ip-netns(8) refuses as a name, or a named namespace) against server and returns
// the received Gbit/s.
func iperf(ns, server string) (float64, error) {
	if !strings.HasPrefix(ns, "/") {
		ns = netns.Path(ns)
	}
	cmd := exec.Command("nsenter", "--net="+ns, "iperf3", "-c", server, "-p", strconv.Itoa(workload.IPerf3Port),
		"-t", strconv.Itoa(iperfSeconds), "-J")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("iperf3 -c %s from %s: %w: %s%s", server, ns, err, out, stderr.String())
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("iperf3 output: %w", err)
	}
	return r.End.SumReceived.BitsPerSecond / 1e9, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
