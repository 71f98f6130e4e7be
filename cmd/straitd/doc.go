// Command straitd is Strait's daemon binary, the one that goes into the image: hub (the
// ClusterSet controller and webhook), agent (one per node), charon (the agent's IPsec
// sidecar), dns (clusterset.local), probe (what strait diagnose, verify and benchmark
// run in a member's pods and agents) and version. People's commands are cmd/strait.
//
// This package only puts the commands together; each command's code lives in the
// package of what it runs (controllers/hubcmd, nodeagent/agentcmd, dns/dnscmd,
// internal/probe, internal/cli). It must never depend on lab/ or test/: deps_test.go checks that. See
// docs/architecture.md.
package main
