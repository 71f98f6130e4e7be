// Package source feeds `straitd dns`: informers on the member's ServiceImports, the
// EndpointSlices carrying the MCS source-cluster label, the Peers and the Membership in
// strait-system. After every change (debounced) it reads them all from the cache, builds
// a new resolver.Snapshot and hands it over to be swapped in atomically.
//
// It only reads; it never writes to the API server. The conversion from API objects to
// the resolver's model (build.go) is pure and tested without an API server.
package source
