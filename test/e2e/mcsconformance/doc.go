// Package mcsconformance runs the Multi-Cluster Services API's own conformance suite,
// every spec, against a lab of its own brought up once by TestMain: the ClusterSet of
// test/conformance (two dual-stack clusters of one gateway node each, a hub, every
// member's ServiceExport honoured), as `make mcs-conformance` brings up for the report
// kept in docs/. The suite deploys its own workloads; the basic lab's sample workloads,
// Prometheus and second gateways would only slow its pods' starts (its specs took
// 35-100 s each there on CI's two cores and the suite outlasted its limit; 27 of 27
// passed in 556 s in this lab, 2026-12-02).
package mcsconformance
