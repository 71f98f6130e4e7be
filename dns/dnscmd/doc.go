// Package dnscmd is the `straitd dns` command: it reads the flags, then puts together
// the packages of dns/ — source feeds server with snapshots, corefile.Keeper keeps
// CoreDNS forwarding the zones, prints keeps the Membership's status.prints — and
// serves /metrics, /healthz and /readyz. The DNS logic itself lives in those packages;
// this one must not grow any.
package dnscmd
