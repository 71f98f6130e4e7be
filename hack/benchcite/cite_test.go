package benchcite

import (
	"slices"
	"strings"
	"testing"
)

// TestFiguresBeforeAReference: a reference vouches for the numbers just before it, a
// list or a range of them with their units, and not for numbers further back. A figure
// written without a unit takes the next one's: "1.104–1.129 s" are both seconds.
func TestFiguresBeforeAReference(t *testing.T) {
	for _, c := range []struct {
		line        string
		want, units [][]string
	}{
		{"| Gateway failover gap after a crash, ms (lab) | 1120[^lab] | ≤ 2000 |", [][]string{{"1120"}}, [][]string{{""}}},
		{"crash 1120 ms[^lab], graceful 188 ms[^lab]", [][]string{{"1120"}, {"188"}}, [][]string{{"ms"}, {"ms"}}},
		{"| Hub, 255 members × 10,000 exports | 0.1113, 0.109, 0.1307[^b] |", [][]string{{"0.1113", "0.109", "0.1307"}}, [][]string{{"", "", ""}}},
		{"sixteen rounds took 1.104–1.129 s[^lab] each", [][]string{{"1.104", "1.129"}}, [][]string{{"s", "s"}}},
		{"1.104 to 1.129 s[^lab] and 2 and 3[^lab]", [][]string{{"1.104", "1.129"}, {"2", "3"}}, [][]string{{"s", "s"}, {"", ""}}},
		{"raw / cable 1.04 / 7.26 cpu-s/GB[^lab]", [][]string{{"1.04", "7.26"}}, [][]string{{"cpu-s/GB", "cpu-s/GB"}}},
		{"the raw path 2.076 CPU-s per GB[^lab] against 1.147[^lab]", [][]string{{"2.076"}, {"1.147"}}, [][]string{{"CPU-s per GB"}, {""}}},
		{"queries/s 89,525 vs 66,086 q/s[^dns]", [][]string{{"66086"}}, [][]string{{"q/s"}}},
		{"5727 MiB and 5694 MiB[^b]", [][]string{{"5727", "5694"}}, [][]string{{"MiB", "MiB"}}},
		{"p99 0.209 ms[^b]", [][]string{{"0.209"}}, [][]string{{"ms"}}},
		{"| **0.912**[^lab] (0.8137–1.126[^lab]) |", [][]string{{"0.912"}, {"0.8137", "1.126"}}, [][]string{{""}, {"", ""}}},
		{"RSS 58.0 MiB (target < 60), 0.2 %[^lab]", [][]string{{"0.2"}}, [][]string{{"%"}}},
		{"lower latency in 1/3 rounds[^dns]", [][]string{{"1", "3"}}, [][]string{{"rounds", "rounds"}}},
	} {
		p, errs := ParsePage(c.line + "\n")
		if len(errs) > 0 {
			t.Errorf("%q: %v", c.line, errs)
			continue
		}
		var got, units [][]string
		for _, ci := range p.Cites {
			got = append(got, ci.Figures)
			units = append(units, ci.Units)
		}
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%q: figures %q, want %q", c.line, got, c.want)
		}
		if !slices.EqualFunc(units, c.units, slices.Equal) {
			t.Errorf("%q: units %q, want %q", c.line, units, c.units)
		}
	}
}

// TestAReferenceWithoutAFigureIsAnError: a reference after words, or glued to a word,
// names the line; references in code blocks are not read.
func TestAReferenceWithoutAFigureIsAnError(t *testing.T) {
	for _, line := range []string{"see the run[^lab]", "the p99[^lab]", "x1.5[^lab]"} {
		if _, errs := ParsePage(line); len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 1: [^lab]") {
			t.Errorf("%q: errors %v, want one naming line 1 and [^lab]", line, errs)
		}
	}
	if p, errs := ParsePage("```\nsee the run[^lab]\n```\n"); len(errs) > 0 || len(p.Cites) > 0 {
		t.Errorf("a code block was read: %v %v", p.Cites, errs)
	}
}
