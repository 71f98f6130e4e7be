// Package require holds the rules every test of this project shares: what a test that
// cannot run here does (it skips, unless the environment variable CI is set: CI must run
// every test, so there it fails), what a root-only test needs, and Eventually, the one
// way a test waits for something to become true. It touches nothing outside the test
// that calls it.
package require
