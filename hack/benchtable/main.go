package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/straitnet/strait/hack/benchfmt"
)

// target is one row: the metric unit a benchmark reports, and the bound it must meet.
type target struct {
	What string
	// Bench is the benchmark's name without "Benchmark" and the -N suffix ("HubScale/full-reconcile").
	Bench, Unit string
	// AtLeast: the figure must be >= Bound; otherwise <= Bound. Zero Bound: reported only.
	AtLeast bool
	Bound   float64
}

// targets are issue 17's (and the failover's of issue 16) in the benchmarks that
// measure them.
func targets() []target {
	return []target{
		{What: "WireGuard cable / raw pod → pod (lab)", Bench: "CableThroughput/wireguard", Unit: "cable/raw", AtLeast: true, Bound: 0.25},
		{What: "VXLAN cable / raw pod → pod (lab)", Bench: "CableThroughput/vxlan", Unit: "cable/raw", AtLeast: true, Bound: 0.8},
		{What: "IPsec cable / raw pod → pod (lab)", Bench: "CableThroughput/ipsec", Unit: "cable/raw"},
		{What: "Raw pod → pod path, machine CPU-s per GB (lab)", Bench: "CableThroughput/vxlan", Unit: "raw-cpu-s/GB"},
		{What: "WireGuard cable, machine CPU-s per GB (lab)", Bench: "CableThroughput/wireguard", Unit: "cable-cpu-s/GB"},
		{What: "VXLAN cable, machine CPU-s per GB (lab)", Bench: "CableThroughput/vxlan", Unit: "cable-cpu-s/GB"},
		{What: "IPsec cable, machine CPU-s per GB (lab)", Bench: "CableThroughput/ipsec", Unit: "cable-cpu-s/GB"},
		{What: "Hub, 255 members × 10,000 exports: one member's change, CPU-s", Bench: "HubScale/one-member-change", Unit: "cpu-s/op", Bound: 0.2},
		{What: "Hub, 255 members × 10,000 exports: full reconcile, CPU-s", Bench: "HubScale/full-reconcile", Unit: "cpu-s/op", Bound: 5},
		{What: "Hub, 255 members × 10,000 exports: peak RSS, MiB", Bench: "HubScale/full-reconcile", Unit: "max-RSS-MiB"},
		{What: "Hub, 64 members × 10,000 exports: the hub's live heap, MiB", Bench: "HubScale/members=64/hub-heap", Unit: "hub-live-heap-MiB"},
		{What: "Hub, 255 members × 10,000 exports: the hub's live heap, MiB", Bench: "HubScale/hub-heap", Unit: "hub-live-heap-MiB"},
		{What: "Hub, 1,000 members × 10,000 exports: the hub's live heap, MiB", Bench: "HubScale/members=1000/hub-heap", Unit: "hub-live-heap-MiB", Bound: 2048},
		{What: "Hub, 1,000 members × 10,000 exports: one member's change, CPU-s", Bench: "HubScale/members=1000/one-member-change", Unit: "cpu-s/op", Bound: 0.05},
		{What: "Hub, 1,000 members × 10,000 exports: full reconcile, CPU-s", Bench: "HubScale/members=1000/full-reconcile", Unit: "cpu-s/op", Bound: 10},
		{What: "Export → ServiceImport in all of 10 members, p99 ms (envtest)", Bench: "ExportToImport", Unit: "p99-ms", Bound: 1000},
		{What: "ClusterSet change → DNS answer in the other cluster, ms (lab)", Bench: "ClusterSetChangeToDNS", Unit: "ms/change-to-dns", Bound: 1000},
		{What: "strait dns ÷ CoreDNS hosts, 10,000 services: queries/s", Bench: "DNSAgainstCoreDNSHosts", Unit: "qps-ratio", AtLeast: true, Bound: 1.2},
		{What: "strait dns ÷ CoreDNS hosts: resident memory (VmRSS)", Bench: "DNSAgainstCoreDNSHosts", Unit: "rss-ratio", Bound: 1},
		{What: "strait dns ÷ CoreDNS hosts at 10k q/s: average latency", Bench: "DNSAgainstCoreDNSHosts", Unit: "avg-latency-ratio", Bound: 1},
		{What: "strait dns ÷ CoreDNS hosts at 10k q/s: p99 latency", Bench: "DNSAgainstCoreDNSHosts", Unit: "p99-latency-ratio", Bound: 1},
		{What: "strait dns p99 latency at 10k q/s, ms", Bench: "DNSAgainstCoreDNSHosts", Unit: "p99-ms", Bound: 1},
		{What: "Agent with 254 peers: RSS, MiB", Bench: "AgentFootprint", Unit: "MiB-RSS", Bound: 60},
		{What: "Agent with 254 peers: idle CPU, % of a core", Bench: "AgentFootprint", Unit: "%CPU-idle", Bound: 1},
		{What: "Agent with 254 peers: one Peer's change to its route, ms", Bench: "AgentFootprint", Unit: "ms-peer-change", Bound: 100},
		{What: "Gateway failover gap after a crash, ms (lab)", Bench: "GatewayFailover", Unit: "ms-gap-crash", Bound: 2000},
		{What: "Gateway failover gap, graceful, ms (lab)", Bench: "GatewayFailover", Unit: "ms-gap-graceful", Bound: 500},
	}
}

// table is the Markdown table of every target with the run's figures.
func table(ts []target, got benchfmt.Figures) string {
	var b strings.Builder
	b.WriteString("| What | Figure | Target | Figure / target | Met |\n|---|---|---|---|---|\n")
	for _, t := range ts {
		vs := got[t.Bench][t.Unit]
		bound := "—"
		if t.Bound != 0 {
			bound = map[bool]string{true: "≥ ", false: "≤ "}[t.AtLeast] + num(t.Bound)
		}
		if len(vs) == 0 {
			fmt.Fprintf(&b, "| %s | not in this run | %s | | |\n", t.What, bound)
			continue
		}
		var figs []string
		worst := vs[0]
		for _, v := range vs {
			figs = append(figs, num(v))
			if (t.AtLeast && v < worst) || (!t.AtLeast && v > worst) {
				worst = v
			}
		}
		if t.Bound == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | | |\n", t.What, strings.Join(figs, ", "), bound)
			continue
		}
		met := "no"
		if (t.AtLeast && worst >= t.Bound) || (!t.AtLeast && worst <= t.Bound) {
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %s |\n", t.What, strings.Join(figs, ", "), bound, worst/t.Bound, met)
	}
	return b.String()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func main() {
	var in io.Reader = os.Stdin
	if len(os.Args) > 1 {
		var rs []io.Reader
		for _, p := range os.Args[1:] {
			f, err := os.Open(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchtable:", err)
				os.Exit(1)
			}
			defer f.Close()
			rs = append(rs, f)
		}
		in = io.MultiReader(rs...)
	}
	got, err := benchfmt.Parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Print(table(targets(), got))
}
