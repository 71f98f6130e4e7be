// Package prints keeps a member's report to the hub and writes it into the Membership's
// status: status.prints, the member's print of the objects the hub wrote into it, so
// that the hub can compare it with its record of its writes instead of watching those
// objects in every member (docs/design-decisions.md, "A hub for 1,000 clusters", step
// 4); and status.connections, the summary of its Peers' connections, which the hub
// shows in the ClusterSet's status instead of watching every member's Peers (members²
// objects).
//
// A print, per ClusterSet (the strait.io/clusterset label) and kind (ServiceImport,
// Service and EndpointSlice in every namespace, Peer in the Membership's:
// memberprint.ReportedKinds), is the count of the member's objects of that kind the hub
// wrote for that ClusterSet (memberprint.Counted) and the sum of their fingerprints
// (memberprint.Of: kind, namespace, name, the digest the hub wrote on the object and
// who else owns its fields, the managers other than Strait's own with the time each
// last changed them, so that strait dns's own clusterset IPs in a ServiceImport leave
// it as the hub wrote it; of a Peer, whose status the active gateway rewrites at each
// health round, its generation, labels and annotations). The connections are
// connections.Summarize over every Peer with a state, the hub's or not: how many, how
// many Connected, and the first 32, those not Connected first.
//
//   - Keeper is pure: it keeps the prints, and the Peers' connections, from informer
//     events (Handler), or from a reflector's store operations (Saw, Gone, Replace),
//     whatever their order, and reports them (Report, Connections). The prints are for
//     every ClusterSet the member holds objects of and for the member's own (the
//     Membership's strait.io/clusterset label), a kind of which it holds none with count
//     0; with no Peer that has a state, the connections are a total of 0. So the hub
//     tells "holds none" from "no report".
//   - Run watches the three kinds with the label selector
//     app.kubernetes.io/managed-by=strait-hub, metadata only, every Peer of the
//     Membership's namespace whole (a thousand at most; the connections read their spec
//     and status), and the Membership. Its reflectors hand the objects straight to the
//     keeper, which keeps a fingerprint an object (some 60 bytes), not the object, and
//     a Peer's connection besides: an informer's store of the objects stripped down to
//     what the print reads would hold some 500 bytes an object, 20 MB at the 40,000
//     objects of a member of a thousand-member ClusterSet with 10,000 exports
//     (TestWhatTheReporterHoldsAnObject). Once every kind, the Peers included, has been
//     listed and the Membership exists, it server-side applies status.prints and
//     status.connections, and nothing else, under straitv1.FieldManagerPrints, whenever
//     they differ from what the Membership holds and from what it last wrote; a burst of
//     changes makes one write (Options.Debounce). A change of the connections'
//     latencies alone waits until Options.LatencyEvery (30 s) after the Membership last
//     held the report: every active gateway rewrites its Peers' latencies every 5 s,
//     which would otherwise make a write every debounce; a change of a state, a count or
//     a print is written at once. A failed write is logged and tried again with
//     back-off; it never stops.
//
// Several strait dns replicas may all run it: they apply the same values under the same
// field manager, so the list is one, not one a replica, and a replica's apply of what
// another wrote changes nothing (the API server does not even bump the
// resourceVersion). While one replica's watches lag behind another's, the two may
// write in turn (at most once a debounce, or an echo wait); they agree again once both
// have the same events. A replica that sees the Membership hold its report takes it
// as written then, so that the replicas together write a change of latencies alone
// about once an interval, not once each.
//
// It writes only status.prints and status.connections of the Membership; it reads the
// hub's objects' metadata and the Peers, and never writes them.
package prints
