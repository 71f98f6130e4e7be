package benchcite

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Check checks one page: every reference has a footnote, every footnote links a run's
// output that read returns (path relative to the page's folder) and is used, and every
// cited figure is one of the results its file reports (ResultsOf) that the reference's
// line names (Scope). Errors name the line, the figure and where it was looked for.
func Check(text string, read func(path string) (string, error)) []error {
	p, errs := ParsePage(text)
	results := map[string][]Result{}
	for _, label := range slices.Sorted(maps.Keys(p.Files)) {
		path := p.Files[label]
		if path == "" {
			continue
		}
		out, err := read(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("footnote [^%s]: %w", label, err))
			continue
		}
		rs := ResultsOf(out)
		if len(rs) == 0 {
			errs = append(errs, fmt.Errorf("footnote [^%s]: %s reports no result (no benchmark line, test log measurement, table or key: value line)", label, path))
			continue
		}
		results[label] = rs
	}
	used := map[string]bool{}
	for _, c := range p.Cites {
		used[c.Label] = true
		path, ok := p.Files[c.Label]
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: [^%s] has no footnote ([^%s]: [docs/bench/<file>](bench/<file>))", c.Line, c.Label, c.Label))
			continue
		}
		rs, ok := results[c.Label]
		if !ok {
			continue // its file's error is reported once above
		}
		scope, in := Scope(rs, c.Text)
		for i, f := range c.Figures {
			u := c.Units[i]
			if slices.ContainsFunc(in, func(r Result) bool { return r.Matches(f) && (u == "" || r.InUnit(u)) }) {
				continue
			}
			if u != "" {
				f += " " + u
			}
			errs = append(errs, fmt.Errorf("line %d: %s is not %s in %s (cited as [^%s])%s", c.Line, f, scope, path, c.Label, values(in)))
		}
	}
	for _, label := range slices.Sorted(maps.Keys(p.Files)) {
		if !used[label] {
			errs = append(errs, fmt.Errorf("footnote [^%s] (%s) is cited nowhere on the page", label, p.Files[label]))
		}
	}
	return errs
}

// Scope is the results that may vouch for the figures on a page's line, and how to say
// which they are. A table row whose first cell is a row of the file's tables (the
// targets' table benchtable appends, say) is vouched for by that row only; a line that
// names a benchmark of the file ("Resolve", "BenchmarkHubScale") by that benchmark's
// results only (its values and its log's measurements), narrowed to the sub-benchmarks
// ("full-reconcile") and the units ("allocs/op") the line names if it names any.
// Otherwise any result of the file may: prose can name its benchmark a sentence earlier,
// and a figure there is still held to what the run reported, not to any number in it.
func Scope(rs []Result, line string) (string, []Result) {
	if strings.HasPrefix(strings.TrimSpace(line), "|") {
		row := tableCells(strings.TrimSpace(line))[0]
		if in := filter(rs, func(r Result) bool { return r.Kind == Cell && r.Name == row }); len(in) > 0 {
			return fmt.Sprintf("in the row %q", row), in
		}
	}
	benched := filter(rs, func(r Result) bool { return (r.Kind == Bench || r.Kind == Log) && r.Name != "" })
	named := map[string]bool{}
	for _, name := range sortedSet(benched, func(r Result) string { top, _, _ := strings.Cut(r.Name, "/"); return top }) {
		named[name] = namesBenchmark(line, name)
	}
	in := filter(benched, func(r Result) bool { top, _, _ := strings.Cut(r.Name, "/"); return named[top] })
	if len(in) == 0 {
		return "a result", rs
	}
	if subs := filter(in, func(r Result) bool { _, sub, ok := strings.Cut(r.Name, "/"); return ok && namesToken(line, sub) }); len(subs) > 0 {
		in = subs
	}
	what := "Benchmark" + strings.Join(sortedSet(in, func(r Result) string { return r.Name }), ", Benchmark")
	units := sortedSet(filter(in, func(r Result) bool { return r.Unit != "" }), func(r Result) string { return r.Unit })
	units = slices.DeleteFunc(units, func(u string) bool { return !namesToken(line, u) })
	if len(units) == 0 {
		return "a result of " + what, in
	}
	return fmt.Sprintf("a value of %s in %s", what, strings.Join(units, ", ")),
		filter(in, func(r Result) bool { return slices.Contains(units, r.Unit) })
}

// namesBenchmark reports whether line names the benchmark as a word of its own, with or
// without "Benchmark" ("Failover" is not named by "GatewayFailover").
func namesBenchmark(line, name string) bool {
	return regexp.MustCompile(`(?:^|[^\w/])(?:Benchmark)?` + regexp.QuoteMeta(name) + `(?:\W|$)`).MatchString(line)
}

// namesToken reports whether line holds s as a token of its own ("allocs/op", not the
// "ms-crash" inside "ms-gap-crash").
func namesToken(line, s string) bool {
	return regexp.MustCompile("(?:^|[\\s|(`])" + regexp.QuoteMeta(s) + "(?:[\\s|),.;:`]|$)").MatchString(line)
}

func filter(rs []Result, keep func(Result) bool) []Result {
	var out []Result
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func sortedSet(rs []Result, key func(Result) string) []string {
	set := map[string]bool{}
	for _, r := range rs {
		set[key(r)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// values says what a narrow scope holds, so that a stale figure's error shows the new one.
func values(in []Result) string {
	if len(in) > 8 {
		return ""
	}
	var vs []string
	for _, r := range in {
		vs = append(vs, r.Text)
	}
	return "; it holds " + strings.Join(vs, ", ")
}
