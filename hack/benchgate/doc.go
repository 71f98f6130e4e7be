// Command benchgate holds `make bench-gate`'s floors: for a subset of the benchmarks
// that runs in minutes, each figure today less a noise margin written beside it. It
// reads the run's `go test -bench` output, prints one table of every floor with the
// run's figure, and exits 1 when a figure breaks its floor or is missing from the run,
// so a regression fails CI. The stretch targets are hack/benchtable's, which never
// fails: a target not met yet is not a regression.
//
//	go run ./hack/benchgate bin/bench-gate.txt bin/bench-gate-lab.txt
//
// The floors' "today" figures are the medians of the calibration runs kept in
// docs/bench/bench-gate.txt (three runs of each part of `make bench-gate`, each with its
// header); a test checks each floor against that file, so moving one means running the
// calibration again:
//
//	for i in 1 2 3; do make bench-gate-local BENCH_GATE_OUT=/tmp/gate-$i.txt; done
//	for i in 1 2 3; do make bench-gate-lab BENCH_GATE_LAB_OUT=/tmp/gate-lab-$i.txt; done
//	cat /tmp/gate-[123].txt /tmp/gate-lab-[123].txt > docs/bench/bench-gate.txt
//
// docs/performance.md shows every floor with its calibration runs, as this prints it
// (a test holds the page to it):
//
//	go run ./hack/benchgate -calibration docs/bench/bench-gate.txt
package main
