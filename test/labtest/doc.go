// Package labtest brings up one strait lab for a test binary (from TestMain) and gives
// its tests the means to look at the lab the way a user would: clients of every
// cluster through the host's loopback, the network namespace of a pod, DNS through the
// nameserver of a pod's resolv.conf, and HTTP to the whereami workload from inside a
// pod. It also holds what more than one suite measures the same way: the prober and
// the gateway failover with its bounds (prober.go, failover.go), one iperf3 stream
// (iperf.go), and the uninstall of docs/install.md with the check that nothing is left
// (uninstall.go).
//
// It owns nothing beyond the lab it brings up and takes down; only one lab can be up on
// a machine, so packages that use it must not run at the same time (make test runs
// them with -p 1).
package labtest
