// Command strait is the people's CLI: render (every member's desired objects, offline),
// diff (what a ClusterSet change would do in the live hub and members), show (what the
// clusterset is doing, per member), version (its own build and every running daemon's),
// export and unexport (a service in the ClusterSet file, git first), join and unjoin (a
// member registered with the person's own credentials, and undone), diagnose (what breaks
// traffic between the members), verify (pod, service and DNS traffic proved with test
// pods), benchmark (their throughput and latency), gather (a tarball for support),
// uninstall (Strait removed in order) and lab (whole clustersets on one machine). The
// daemons are the other binary, cmd/straitd, so that the lab's control-plane runner and
// pod emulation never ship in an image.
//
// This package only puts the commands together. Each command is a package of its own
// below it, thin over the library it drives: render (plan), diff (plan, controllers'
// reader), show and version (show), export and unexport (export, over plan/file), join
// and unjoin (join, over plan/file), diagnose, verify, benchmark, gather and uninstall
// (diagnose, over internal/probe), lab (lab, over the lab library). What they share is
// internal/cli's. Nothing it links imports a package under test/ (deps_test.go). See
// docs/architecture.md and docs/cli.md.
package main
