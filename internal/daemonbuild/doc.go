// Package daemonbuild is how Strait's daemons say which build they run where the people's
// CLI reads it without exec and without reading pods: a member's agents and DNS servers
// each keep an entry of their own in the Membership's status.daemons (server-side apply
// of the status, one field manager per daemon, so that no daemon touches another's entry
// and no read-modify-write races), and the hub puts its own in the ClusterSet's status.
// `strait version` and `strait show versions` read both through what the hub may already
// read in its members.
//
// It owns only those entries: it never writes a Membership's spec (the hub's), and
// another daemon's entry only to take it out once that daemon is gone without
// withdrawing it: its node left the cluster (Gone, Prune: the active gateway's agent does
// it, since a daemon killed with its node could not withdraw its own), or its pod is no
// longer among its Service's endpoints (GonePods: each strait dns does it for the
// others).
package daemonbuild
