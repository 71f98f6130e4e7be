// Package clustersetip writes the clusterset IP of every ClusterSetIP ServiceImport in a
// member: the cluster IPs the member's API server allocated to the Service the hub
// derived from the import (labelled strait.io/service-import), copied into the
// import's spec.ips. It is the one writer of that field, under its own server-side apply
// field manager (FieldManagerClusterSetIP); the hub writes the rest of the import and
// never names spec.ips, so neither takes the other's field away. It reads the
// ServiceImports from the snapshots strait dns answers from (Writer.Observe; no copy of
// its own) and watches Strait's derived Services, keeping only their names and IPs; it
// writes nothing else and answers no DNS question.
package clustersetip
