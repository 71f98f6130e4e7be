// Command steptimes says where the time of `make test` and `.ci/run` went: the budget
// CI's 90 minutes must hold (issue 33: the whole run within 40 minutes).
//
// hack/timed.sh records each step as a row of a TSV file (name, seconds, exit status;
// a nested step's name is its parents' joined with " > "). Two subcommands:
//
//	go test -v ./test/e2e/... 2>&1 | go run ./hack/steptimes tee
//	go run ./hack/steptimes table [-all] [FILE]
//
// tee copies go test's output through unchanged and adds a row for every package it
// reports (ok or FAIL with a time), and, in verbose output, for each top-level test
// and the lab's own "lab up: 55.4s" line, under the step it runs in ($STRAIT_STEP).
// table prints the rows as a tree with each step's share and what its children leave
// unexplained (build, lab down, checks); the tests of a package are sorted slowest
// first, the steps kept in the order they ran.
package main
