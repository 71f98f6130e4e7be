// Package resolver answers clusterset.local questions from an immutable Snapshot of the
// member's imported services. It is pure: no client, no clock, no randomness, no I/O.
// A Snapshot holds one immutable Entry per service, by pointer, so that successive
// snapshots share the entries of the services that did not change; which clusters are
// connected is a property of the Snapshot, applied while answering. The only mutable
// state is the round-robin position of each ClusterSetIP service, an atomic counter in
// its Entry that a new Entry for the same service inherits.
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
