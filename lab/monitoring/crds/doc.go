// Package crds holds prometheus-operator's PodMonitor, ServiceMonitor and PrometheusRule
// CustomResourceDefinitions (group monitoring.coreos.com), the only kinds of it the
// monitoring component (kustomize/components/monitoring) uses. The lab applies them to
// its clusters when a lab file asks for monitoring, so that the component's objects
// apply without a prometheus-operator installed.
//
// The YAML files are generated, not edited: `make manifests` runs controller-gen on
// prometheus-operator's Go types (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1,
// at the version go.mod pins) as upstream generates its own CRDs, loading them by import
// path from this module, so the Kubernetes types they embed are those Strait builds
// with; `make verify` fails when they are stale.
package crds
