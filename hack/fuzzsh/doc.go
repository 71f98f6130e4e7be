// Package fuzzsh holds the test of hack/fuzz.sh, the script of `make fuzz`: a shell
// script's decisions (a finding fails, a fuzzing coordinator that missed its own
// deadline gets one more run) are kept by a test like any other code's. It has no code
// of its own; the test runs the script in a scratch git repository with a fake go
// command (GO) that plays the outcomes, and never fuzzes anything.
package fuzzsh
