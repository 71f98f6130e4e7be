// Command benchtable prints the performance targets of docs/performance.md as one
// table: each figure as `go test -bench` reported it (the benchmark's own metric), the
// target beside it and the ratio of figure to target. `make bench` and `make
// bench-lab` pipe their output through it; a figure the run did not produce is shown as
// "not in this run", never guessed. An unmet target is reported ("Met: no"), never an
// error: targets are where the code should get to, and the floors a regression must
// not break are hack/benchgate's (make bench-gate, in CI).
//
//	go test -run '^$' -bench . ./test/e2e/ | go run ./hack/benchtable
//	go run ./hack/benchtable docs/bench/bench.txt docs/bench/bench-lab.txt
package main
