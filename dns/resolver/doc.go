// Package resolver answers clusterset.local questions from an immutable Snapshot of the
// member's imported services. It is pure: no client, no clock, no randomness, no I/O.
// The only mutable state is the round-robin position of each ClusterSetIP service, an
// atomic counter that a new Snapshot inherits from the one it replaces.
//
// Names served under each zone (clusterset.local and the configured extra zones):
//
//	dns-version.<zone>                                TXT "1.0.0"
//	<svc>.<ns>.svc.<zone>                             A/AAAA
//	<cluster>.<svc>.<ns>.svc.<zone>                   A/AAAA (unless cluster names are off)
//	<hostname>.<cluster>.<svc>.<ns>.svc.<zone>        A/AAAA of one headless endpoint
//	_<port>._<proto>.<svc>.<ns>.svc.<zone>            SRV for a named port
//	_<port>._<proto>.<cluster>.<svc>.<ns>.svc.<zone>  SRV (unless cluster names are off)
//
// It must not know where a Snapshot's data comes from (that is package source) nor how
// answers travel (package server).
package resolver
