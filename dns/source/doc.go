// Package source feeds `straitd dns`: it watches the member's ServiceImports, the
// EndpointSlices carrying the MCS source-cluster label, and the Peers and the Membership
// in strait-system, and hands a new resolver.Snapshot over after every change
// (debounced) to be swapped in atomically.
//
// It keeps no typed objects. Each object is turned into a record of what the answers
// need as it is decoded (record.go: the strings that repeat, such as namespaces,
// cluster names and port lists, interned), and the records go straight into a store
// (store.go) that keeps one resolver.Entry per imported service. A snapshot is built
// from the store's map of entries without copying it; a later change works on a copy of
// the map and rebuilds only the entries of the services it touches.
//
// It only reads; it never writes to the API server. Records, store and snapshot
// building are pure and tested without an API server; source.go is the I/O: client-go
// reflectors whose store is this package's.
package source
