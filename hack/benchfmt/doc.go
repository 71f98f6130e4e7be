// Package benchfmt reads the figures out of `go test -bench` output: every benchmark
// line's metrics by benchmark name and unit. hack/benchtable (the stretch targets) and
// hack/benchgate (the floors CI holds) read a run through it, so both see the same
// figures. It reads text only: no file, no process.
package benchfmt
