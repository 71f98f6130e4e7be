// Command promrules writes the monitoring component's PrometheusRules from its plain
// Prometheus rule files, so that the rules users load with rule_files and those
// prometheus-operator loads are one text (make manifests; make verify fails when they
// differ):
//
//	go run ./hack/promrules kustomize/components/monitoring
//
// It reads rules/<kind>.rules.yaml and writes <kind>/prometheusrule.yaml for each kind
// (member, hub) whose rule file exists.
package main
