// Package prints keeps a member's print of the objects the hub wrote into it and
// writes it into the Membership's status.prints, so that the hub can compare it with
// its record of its writes instead of watching those objects in every member
// (docs/design-decisions.md, "A hub for 1,000 clusters", step 4).
//
// A print, per ClusterSet (the strait.io/clusterset label) and kind (ServiceImport,
// Service, EndpointSlice: memberprint.ReportedKinds, in every namespace), is the count
// of the member's objects of that kind the hub wrote for that ClusterSet
// (memberprint.Counted) and the sum of their fingerprints (memberprint.Of: kind,
// namespace, name and resourceVersion).
//
//   - Keeper is pure: it keeps the prints from informer events (Handler), or from a
//     reflector's store operations (Saw, Gone, Replace), whatever their order, and
//     reports them (Report) for every ClusterSet the member holds objects of and for
//     the member's own (the Membership's strait.io/clusterset label), a kind of which
//     it holds none with count 0, so that the hub tells "holds none" from "no report".
//   - Run watches the three kinds with the label selector
//     app.kubernetes.io/managed-by=strait-hub, metadata only, and the Membership. Its
//     reflectors hand the objects straight to the keeper, which keeps a fingerprint an
//     object (some 60 bytes), not the object: an informer's store of the objects
//     stripped down to what the print reads would hold some 500 bytes an object, 20 MB
//     at the 40,000 objects of a member of a thousand-member ClusterSet with 10,000
//     exports (TestWhatTheReporterHoldsAnObject). Once every kind has been listed and
//     the Membership exists, it server-side applies status.prints, and nothing else,
//     under straitv1.FieldManagerPrints, whenever the prints differ from what the
//     Membership holds and from what it last wrote; a burst of changes makes one write
//     (Options.Debounce). A failed write is logged and tried again with back-off; it
//     never stops.
//
// Several strait dns replicas may all run it: they apply the same values under the same
// field manager, so the list is one, not one a replica, and a replica's apply of what
// another wrote changes nothing (the API server does not even bump the
// resourceVersion). While one replica's watches lag behind another's, the two may
// write in turn (at most once a debounce, or an echo wait); they agree again once both
// have the same events.
//
// It writes only status.prints of the Membership; it reads the hub's objects' metadata
// and never writes them.
package prints
