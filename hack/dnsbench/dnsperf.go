package main

import (
	"fmt"
	"math"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// mode is one way of running dnsperf: throughput (no rate limit) or latency (a fixed
// offered load, with every answer's latency kept for the percentiles).
type mode struct {
	name, desc string
	args       []string
	// perQuery runs dnsperf -v, which prints each answer's latency.
	perQuery bool
}

// result is one dnsperf run against one server.
type result struct {
	qps, avgMs, sdMs float64
	lost             int
	// p50Ms and p99Ms are percentiles of the answers' latencies; zero when the mode
	// does not keep them.
	p50Ms, p99Ms float64
}

func dnsperf(o options, addr, queries string, m mode) (result, error) {
	host, port, _ := net.SplitHostPort(addr)
	args := append([]string{"-s", host, "-p", port, "-d", queries, "-l", strconv.Itoa(o.seconds),
		"-c", strconv.Itoa(o.clients), "-T", "1", "-t", "2"}, m.args...)
	if m.perQuery {
		args = append(args, "-v")
	}
	out, err := exec.Command(o.dnsperf, args...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("dnsperf: %w\n%s", err, tail(out))
	}
	return parseDNSPerf(string(out), m.perQuery)
}

// tail is the end of a long output, for error messages.
func tail(out []byte) []byte {
	const keep = 4096
	if len(out) > keep {
		return out[len(out)-keep:]
	}
	return out
}

// parseDNSPerf reads dnsperf's summary and, with perQuery, the latency of every answer
// (the "> NOERROR name A 0.000123" lines of -v). Every answer must be NOERROR.
func parseDNSPerf(out string, perQuery bool) (result, error) {
	var r result
	for _, m := range []struct {
		re  string
		dst *float64
		mul float64
	}{
		{`Queries per second:\s+([0-9.]+)`, &r.qps, 1},
		{`Average Latency \(s\):\s+([0-9.]+)`, &r.avgMs, 1000},
		{`Latency StdDev \(s\):\s+([0-9.]+)`, &r.sdMs, 1000},
	} {
		sm := regexp.MustCompile(m.re).FindStringSubmatch(out)
		if sm == nil {
			return r, fmt.Errorf("no %s in dnsperf output:\n%s", m.re, tail([]byte(out)))
		}
		v, _ := strconv.ParseFloat(sm[1], 64)
		*m.dst = v * m.mul
	}
	if sm := regexp.MustCompile(`Response codes:\s+(.*)`).FindStringSubmatch(out); sm == nil || !strings.HasPrefix(sm[1], "NOERROR") || strings.Contains(sm[1], ",") {
		return r, fmt.Errorf("not every answer was NOERROR:\n%s", tail([]byte(out)))
	}
	if sm := regexp.MustCompile(`Queries lost:\s+(\d+)`).FindStringSubmatch(out); sm != nil {
		r.lost, _ = strconv.Atoi(sm[1])
	}
	if !perQuery {
		return r, nil
	}
	var ms []float64
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "> ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			ms = append(ms, v*1000)
		}
	}
	if len(ms) == 0 {
		return r, fmt.Errorf("no per-query latencies in dnsperf -v output:\n%s", tail([]byte(out)))
	}
	slices.Sort(ms)
	r.p50Ms, r.p99Ms = percentile(ms, 50), percentile(ms, 99)
	return r, nil
}

// percentile p (nearest rank) of sorted, which is not empty.
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
