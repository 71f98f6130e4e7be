// Package monitoring is what the lab's Prometheus servers run from, computed without
// I/O: the configuration of each (the monitoring component's plain configuration in
// kustomize/components/monitoring/prometheus, with the cluster's name, its kubeconfig,
// the lab's intervals and, for the hub's, the members' Prometheus servers filled in)
// and the alert rules with their durations shortened for the lab, so that a fault fires
// its alert in seconds. The lab (package lab) writes them and runs the servers; crds/
// holds the monitoring.coreos.com CRDs it installs so that the component's monitors
// apply.
package monitoring
