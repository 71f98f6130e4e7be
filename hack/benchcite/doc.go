// Package benchcite checks that the figures the performance pages quote come from the
// benchmark runs kept under docs/bench/, so a figure cannot outlive the run it came
// from without a test failing.
//
// A page cites a run with a Markdown footnote right after the figures it vouches for,
// and the footnote links the file:
//
//	crash 1120 ms[^lab], graceful 188 ms[^lab]; one member's change 0.1113, 0.109, 0.1307 cpu-s[^bench]
//
//	[^lab]: [docs/bench/bench-lab.txt](bench/bench-lab.txt), `make bench-lab`.
//
// The figures of a reference are the numbers just before it, joined by ", ", "–", "/",
// ";", " to " or " and ", each with at most one unit after it ("ms", "CPU-s per GB"). Every one of them
// must appear in the cited file, as written or as a number of the file rounded to the
// figure's decimals (thousands separators do not count). Numbers elsewhere on the page
// are not checked: a page says in words which run a figure without a footnote is from.
//
// The package reads text only; the test beside it reads docs/performance*.md.
package benchcite
