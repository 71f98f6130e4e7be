// Package lab is the `strait lab` command and its subcommands (up, down, status, check,
// exec, kubeconfig, load-image, git url|clone|commit, and the hidden serve, the lab
// daemon that up starts). It finds
// the binaries the lab runs (control planes, CoreDNS, straitd), reads the lab file and
// hands everything to the library of the same name, github.com/straitnet/strait/lab,
// where the work is done.
package lab
