package join

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/straitnet/strait/cmd/strait/diagnose"
)

// strait benchmark between c1 and c2 with the person's own credentials: throughput and
// latency pod → pod across and the baseline inside c1, each figure plausible (throughput
// over 1 Mbit/s from a few MB sent, round trips between 1 µs and a second) and the ratio
// computed from them; the table says the same for people.
func TestBenchmarkAcrossAndInside(t *testing.T) {
	env.Require(t)
	kc := env.Lab.State().KubeconfigPath
	members := []string{"--member-kubeconfig", "c1=" + kc("c1"), "--member-kubeconfig", "c2=" + kc("c2")}
	for _, measure := range []string{"throughput", "latency"} {
		out, _, code := strait(t, append([]string{"benchmark", measure, "--for", "3s", "--count", "100", "-o", "json"}, members...)...)
		var rep diagnose.BenchmarkReport
		if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Runs) != 2 {
			t.Fatalf("strait benchmark %s: exit %d, %v, %d runs; want 0 and two runs", measure, code, err, len(rep.Runs))
		}
		across, inside := rep.Runs[0], rep.Runs[1]
		if !across.Across || !strings.HasPrefix(across.From, "c1/") || !strings.HasPrefix(across.To, "c2/") ||
			inside.Across || !strings.HasPrefix(inside.To, "c1/") || inside.To == inside.From {
			t.Errorf("%s: runs %+v; want c1 → c2, then inside c1 between two nodes", measure, rep.Runs)
		}
		var a, b float64
		for i, r := range rep.Runs {
			v := 0.0
			switch {
			case r.Throughput != nil:
				v = r.Throughput.BitsPerSecond
				if v < 1e6 || r.Throughput.Bytes < 1e6 {
					t.Errorf("%s: %.0f bit/s from %d bytes; want over 1 Mbit/s and 1 MB", r.Between, v, r.Throughput.Bytes)
				}
			case r.Latency != nil:
				v = r.Latency.Avg
				if r.Latency.Count != 100 || r.Latency.Min < 1 || r.Latency.Max > 1e6 || r.Latency.Avg < r.Latency.Min || r.Latency.Avg > r.Latency.Max {
					t.Errorf("%s: %+v; want 100 round trips between 1 µs and 1 s", r.Between, r.Latency)
				}
			default:
				t.Errorf("%s: no %s figure", r.Between, measure)
			}
			if i == 0 {
				a = v
			} else {
				b = v
			}
		}
		if b == 0 || math.Abs(rep.Ratio-a/b) > 1e-9 || rep.Ratio <= 0 {
			t.Errorf("%s: ratio %v; want across ÷ inside = %v", measure, rep.Ratio, a/b)
		}
	}
	out, _, code := strait(t, append([]string{"benchmark", "throughput", "--for", "3s"}, members...)...)
	if code != 0 || !strings.Contains(out, "c1 → c2") || !strings.Contains(out, "inside c1") || !strings.Contains(out, "ratio across ÷ inside (throughput): ") {
		t.Errorf("strait benchmark throughput: exit %d; want 0, the two runs and the ratio in the table", code)
	}
}
