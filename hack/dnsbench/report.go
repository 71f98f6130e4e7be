package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// report prints the table of one mode.
func report(o options, m mode, servers []*server, results map[string][]result) {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	_, _ = os.Stdout.WriteString(table(o, m, names, results))
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// table is the Markdown table of one mode: the first server (strait dns) against each.
func table(o options, m mode, names []string, results map[string][]result) string {
	var b strings.Builder
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(&b, format, a...) }
	col := func(rs []result, f func(result) float64) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return v
	}
	base := results[names[0]]
	p("\n### %s: %d services, dnsperf -c %d -T 1 %s, %d rounds of %d s, %d UDP sockets per server\n\n",
		m.name, o.services, o.clients, m.desc, o.rounds, o.seconds, o.udpSockets)
	p("Medians over the rounds; the ratios are the medians of the per-round ratios (the servers of a round run back to back, so they share the machine's load of that moment).")
	if m.perQuery {
		p(" Percentiles are of every answer's latency in a round (dnsperf -v).")
	}
	p("\n\n| server | queries/s | avg latency (ms) | latency stddev (ms) |")
	if m.perQuery {
		p(" p50 latency (ms) | p99 latency (ms) |")
	}
	p(" lost | strait dns QPS ÷ this | this avg latency ÷ strait dns |")
	if m.perQuery {
		p(" this p99 ÷ strait dns |")
	}
	p(" rounds strait dns had the higher QPS / lower latency |\n|---|---:|---:|---:|")
	if m.perQuery {
		p("---:|---:|")
	}
	p("---:|---:|---:|")
	if m.perQuery {
		p("---:|")
	}
	p("---:|\n")
	for _, name := range names {
		rs := results[name]
		var rq, rl, r99 []float64
		wonQ, wonL, lost := 0, 0, 0
		for i, r := range rs {
			rq = append(rq, base[i].qps/r.qps)
			rl = append(rl, r.avgMs/base[i].avgMs)
			if m.perQuery {
				r99 = append(r99, r.p99Ms/base[i].p99Ms)
			}
			if base[i].qps > r.qps {
				wonQ++
			}
			if base[i].avgMs < r.avgMs {
				wonL++
			}
			lost += r.lost
		}
		won := fmt.Sprintf("%d/%d, %d/%d", wonQ, len(rs), wonL, len(rs))
		if name == names[0] {
			won = "–"
		}
		p("| %s | %.0f | %.3f | %.3f |", name, median(col(rs, func(r result) float64 { return r.qps })),
			median(col(rs, func(r result) float64 { return r.avgMs })), median(col(rs, func(r result) float64 { return r.sdMs })))
		if m.perQuery {
			p(" %.3f | %.3f |", median(col(rs, func(r result) float64 { return r.p50Ms })), median(col(rs, func(r result) float64 { return r.p99Ms })))
		}
		p(" %d | %.2f | %.2f |", lost, median(rq), median(rl))
		if m.perQuery {
			p(" %.2f |", median(r99))
		}
		p(" %s |\n", won)
	}
	return b.String()
}

// memInfo is a process's memory as /proc/<pid>/status tells it, in kB.
type memInfo struct {
	// rss is VmRSS, resident now; hwm is VmHWM, the most it was resident.
	rss, hwm int
	// anon is RssAnon (heap, stacks: what the program allocated); file is RssFile
	// (pages of its binary and other mapped files, shared with the page cache).
	anon, file int
}

// parseStatus reads the memory lines of /proc/<pid>/status.
func parseStatus(status string) (memInfo, error) {
	var mi memInfo
	for _, f := range []struct {
		name string
		dst  *int
	}{{"VmRSS", &mi.rss}, {"VmHWM", &mi.hwm}, {"RssAnon", &mi.anon}, {"RssFile", &mi.file}} {
		sm := regexp.MustCompile(`(?m)^` + f.name + `:\s+(\d+) kB`).FindStringSubmatch(status)
		if sm == nil {
			return mi, fmt.Errorf("no %s in the process status", f.name)
		}
		*f.dst, _ = strconv.Atoi(sm[1])
	}
	return mi, nil
}

// memory prints each server's memory after the runs, and what strait dns's metrics say
// it holds.
// memory prints the servers' memory table and returns what it read (nil where it could
// not).
func memory(servers []*server, metricsAddr string) []*memInfo {
	names := make([]string, len(servers))
	mem := make([]*memInfo, len(servers))
	for i, s := range servers {
		names[i] = s.name
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
		if err == nil {
			if mi, err := parseStatus(string(status)); err == nil {
				mem[i] = &mi
			}
		}
	}
	var metrics string
	if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		metrics = string(body)
	}
	_, _ = os.Stdout.WriteString(memoryTable(names, mem, metrics))
	return mem
}

// memoryTable is the Markdown table of the servers' memory (mem[i] nil when it could
// not be read), strait dns (the first) against each, the target against CoreDNS hosts,
// and strait dns's memory metrics.
func memoryTable(names []string, mem []*memInfo, metrics string) string {
	var b strings.Builder
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(&b, format, a...) }
	mib := func(kb int) string { return fmt.Sprintf("%.1f", float64(kb)/1024) }
	ratio := func(a, b int) string { return fmt.Sprintf("%.2f", float64(a)/float64(b)) }
	p("\n### memory after the runs\n\nFrom /proc/<pid>/status of each server before it is stopped. VmRSS is what is resident now, VmHWM the most that ever was; RssAnon is the program's own memory (heap, stacks), RssFile the pages of its binary in memory, which the kernel shares with the page cache (it varies from run to run with what else the machine does).\n\n")
	p("| server | VmRSS (MiB) | VmHWM (MiB) | RssAnon (MiB) | RssFile (MiB) | strait dns VmRSS ÷ this | strait dns VmHWM ÷ this | strait dns RssAnon ÷ this |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	base := mem[0]
	hosts := -1
	for i, name := range names {
		if name == "CoreDNS hosts" {
			hosts = i
		}
		m := mem[i]
		if m == nil {
			p("| %s | ? | ? | ? | ? | ? | ? | ? |\n", name)
			continue
		}
		p("| %s | %s | %s | %s | %s |", name, mib(m.rss), mib(m.hwm), mib(m.anon), mib(m.file))
		if base == nil {
			p(" ? | ? | ? |\n")
			continue
		}
		p(" %s | %s | %s |\n", ratio(base.rss, m.rss), ratio(base.hwm, m.hwm), ratio(base.anon, m.anon))
	}
	if hosts >= 0 && base != nil && mem[hosts] != nil {
		r := float64(base.rss) / float64(mem[hosts].rss)
		verdict := "met"
		if r > 1 {
			verdict = "not met"
		}
		p("\nTarget (issue 17): strait dns VmRSS ÷ CoreDNS hosts VmRSS ≤ 1.00 — **%.2f, %s**.\n", r, verdict)
	}
	if metrics != "" {
		p("\nstrait dns metrics:\n\n```\n")
		for line := range strings.Lines(metrics) {
			for _, name := range []string{"strait_dns_snapshot_services ", "strait_dns_snapshot_records ", "go_memstats_heap_inuse_bytes ",
				"go_memstats_next_gc_bytes ", "go_gc_duration_seconds_count ", "go_gc_gogc_percent "} {
				if strings.HasPrefix(line, name) {
					b.WriteString(line)
				}
			}
		}
		p("```\n")
	}
	return b.String()
}
