// Command mcscrds writes the Multi-Cluster Services CRDs (ServiceExport, ServiceImport)
// exactly as the sigs.k8s.io/mcs-api module ships them, so that the CRDs a member gets
// always match the Go types Strait compiles against. `make manifests` runs it.
// It is a build-time generator with no runtime role.
package main
