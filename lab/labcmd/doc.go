// Package labcmd is the `strait lab` command and its subcommands (up, down, status,
// exec, kubeconfig, and the hidden serve and workload that the lab runs itself). It
// finds the binaries the lab runs (control planes, CoreDNS, straitd), reads the lab file
// and hands everything to package lab, where the work is done.
package labcmd
