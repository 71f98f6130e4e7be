// Package alerts reads Strait's alerts firing from a Prometheus (the hub's, which also
// holds the members' alerts through federation), each with what it is about and its
// runbook in docs/runbooks.md: what `strait show slo` and `strait diagnose --prometheus`
// print.
package alerts
