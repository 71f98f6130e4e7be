package benchcite

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestFiguresBeforeAReference: a reference vouches for the numbers just before it, a
// list or a range of them with their units, and not for numbers further back.
func TestFiguresBeforeAReference(t *testing.T) {
	for _, c := range []struct {
		line string
		want [][]string
	}{
		{"| Gateway failover gap after a crash, ms (lab) | 1120[^lab] | ≤ 2000 |", [][]string{{"1120"}}},
		{"crash 1120 ms[^lab], graceful 188 ms[^lab]", [][]string{{"1120"}, {"188"}}},
		{"| Hub, 255 members × 10,000 exports | 0.1113, 0.109, 0.1307[^b] |", [][]string{{"0.1113", "0.109", "0.1307"}}},
		{"sixteen rounds took 1.104–1.129 s[^lab] each", [][]string{{"1.104", "1.129"}}},
		{"raw / cable 1.04 / 7.26 cpu-s/GB[^lab]", [][]string{{"1.04", "7.26"}}},
		{"the raw path 2.076 CPU-s per GB[^lab] against 1.147[^lab]", [][]string{{"2.076"}, {"1.147"}}},
		{"queries/s 89,525 vs 66,086 q/s[^dns]", [][]string{{"66086"}}},
		{"5727 MiB and 5694 MiB[^b]", [][]string{{"5727", "5694"}}},
		{"p99 0.209 ms[^b]", [][]string{{"0.209"}}},
		{"| **0.912**[^lab] (0.8137–1.126[^lab]) |", [][]string{{"0.912"}, {"0.8137", "1.126"}}},
		{"RSS 58.0 MiB (target < 60), 0.2 %[^lab]", [][]string{{"0.2"}}},
	} {
		p, errs := ParsePage(c.line + "\n")
		if len(errs) > 0 {
			t.Errorf("%q: %v", c.line, errs)
			continue
		}
		var got [][]string
		for _, ci := range p.Cites {
			got = append(got, ci.Figures)
		}
		if !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%q: figures %q, want %q", c.line, got, c.want)
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

// TestAFigureAppearsAsWrittenOrRounded: a figure matches a number of the run as written
// or rounded to the figure's decimals, thousands separators aside; nothing else.
func TestAFigureAppearsAsWrittenOrRounded(t *testing.T) {
	ns := NumbersOf("BenchmarkGatewayFailover-2   3   4376182777 ns/op   1120 ms-gap-crash   0.1584 cable/raw\n" +
		"longest time without an answer 1.106s; 89,525 q/s; 0.2 %CPU-idle; 57.75 MiB-RSS\n")
	for f, want := range map[string]bool{
		"1120": true, "0.1584": true, "0.158": true, "0.16": true, "1.106": true, "1.11": true,
		"89525": true, "0.20": true, "57.8": true, "58": true, "57.75": true,
		"1.12": false, "0.159": false, "1121": false, "89": false, "57.7": false, "0.1585": false,
	} {
		if got := ns.Appears(f); got != want {
			t.Errorf("Appears(%q) = %v, want %v", f, got, want)
		}
	}
}

// TestCheckNamesWhatIsWrong: a figure missing from its run, a reference without a
// footnote, a footnote without a bench/ link, a missing file and an unused footnote are
// each reported with the line or the footnote; a page whose figures are all in their
// runs passes.
func TestCheckNamesWhatIsWrong(t *testing.T) {
	files := map[string]string{"bench/lab.txt": "BenchmarkGatewayFailover-2 3 1 ns/op 1120 ms-gap-crash 188.0 ms-gap-graceful\n"}
	read := func(path string) (string, error) {
		out, ok := files[path]
		if !ok {
			return "", fmt.Errorf("%s: %w", path, os.ErrNotExist)
		}
		return out, nil
	}
	good := "crash 1120 ms[^lab], graceful 188 ms[^lab]\n\n[^lab]: [docs/bench/lab.txt](bench/lab.txt), `make bench-lab`.\n"
	if errs := Check(good, read); len(errs) > 0 {
		t.Errorf("a page citing its run's figures: %v", errs)
	}
	for _, c := range []struct{ page, want string }{
		{"crash 1110 ms[^lab]\n\n[^lab]: [lab](bench/lab.txt)\n", "line 1: 1110 is not in bench/lab.txt (cited as [^lab])"},
		{"crash 1120 ms[^run]\n\n[^lab]: [lab](bench/lab.txt)\n", "line 1: [^run] has no footnote"},
		{"crash 1120 ms[^run]\n\n[^lab]: [lab](bench/lab.txt)\n", "footnote [^lab] (bench/lab.txt) is cited nowhere"},
		{"crash 1120 ms[^lab]\n\n[^lab]: bench-lab.txt\n", "line 3: footnote [^lab] links no file under bench/"},
		{"crash 1120 ms[^lab]\n\n[^lab]: [lab](bench/gone.txt)\n", "footnote [^lab]: bench/gone.txt: file does not exist"},
		{"crash 1120 ms[^lab]\n\n[^lab]: [lab](bench/lab.txt)\n[^old]: [lab](bench/lab.txt)\n", "footnote [^old] (bench/lab.txt) is cited nowhere"},
	} {
		errs := Check(c.page, read)
		if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), c.want) }) {
			t.Errorf("page %q: errors %v, want one with %q", c.page, errs, c.want)
		}
	}
}
