// Package benchcite checks that the figures the performance pages quote come from the
// benchmark runs kept under docs/bench/, so a figure cannot outlive the run it came
// from without a test failing.
//
// A page cites a run with a Markdown footnote right after the figures it vouches for,
// and the footnote links the file:
//
//	crash 1120 ms[^lab], graceful 188 ms[^lab]; one member's change 0.1113, 0.109, 0.1307 cpu-s[^bench]
//	| Resolve (dns/resolver) | allocs/op | 1[^gate] | 10 % | ≤ 1.1 | 1, 1, 1[^gate] |
//
//	[^lab]: [docs/bench/bench-lab.txt](bench/bench-lab.txt), `make bench-lab`.
//
// The figures of a reference are the numbers just before it, joined by ", ", "–", "/",
// ";", " to " or " and ", each with at most one unit after it ("ms", "CPU-s per GB"; a
// figure without one takes the next one's). Each must be a result the cited file
// reports (ResultsOf: a benchmark line's value, a measurement a test logged, a figure in
// a table's cell, a "key: value" line), not any number in it: a date, the load average,
// an iteration count or a log's round number vouch for nothing, so small figures like 1,
// 3 or 18 are held to something. The result must match as written or rounded to the
// figure's decimals, be in the unit the page writes (a word of the result's unit or of
// its column's header), and be one of what the reference's line names (Scope): the row
// of the file's targets' table a page's row repeats, or the benchmark and unit a line
// names ("| Resolve (dns/resolver) | allocs/op |" is held to BenchmarkResolve's
// allocs/op). Numbers without a reference are not checked: a page says in words which
// run a figure without a footnote is from.
//
// The package reads text only; the test beside it reads docs/performance*.md.
package benchcite
