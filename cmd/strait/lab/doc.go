// Package lab is the `strait lab` command and its subcommands (up, down, status, exec,
// kubeconfig, git, and the hidden serve and workload that the lab runs itself). It finds
// the binaries the lab runs (control planes, CoreDNS, straitd), reads the lab file and
// hands everything to the library of the same name, github.com/straitnet/strait/lab,
// where the work is done.
package lab
