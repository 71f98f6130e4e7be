// Package promcheck holds the monitoring tests' Prometheus: the version the Makefile
// builds from source (make prometheus-binaries: prometheus and promtool into
// bin/prometheus/<Version>) and Metrics, which lints a daemon's metrics with
// `promtool check metrics` as a user's CI would.
package promcheck
