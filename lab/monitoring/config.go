package monitoring

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"sigs.k8s.io/yaml"
)

// Port is where the lab's Prometheus servers listen, in their control plane's namespace.
const Port = 9090

// FederatePath is the federation endpoint the hub's Prometheus scrapes the members' at.
const FederatePath = "/federate"

// Values are what one Prometheus server's configuration says beyond the component's.
type Values struct {
	// Cluster is the server's external label "cluster": the member's name, or the hub's.
	Cluster string
	// Kubeconfig is the file every kubernetes_sd_configs entry discovers pods with.
	Kubeconfig string
	// RuleFile is the one rule file the server evaluates.
	RuleFile string
	// Interval is both the scrape and the evaluation interval.
	Interval time.Duration
	// Federate are the members' Prometheus servers the hub's federates from; set only
	// for the hub, whose configuration has the one job with metrics_path FederatePath.
	Federate []netip.AddrPort
}

// Config is base (a Prometheus configuration file of the monitoring component) with v
// filled in: global's intervals and external label "cluster", rule_files, the
// kubeconfig_file of every Kubernetes service discovery, and the federation job's
// targets. It fails naming what base lacks, rather than run a server that scrapes
// nothing.
func Config(base []byte, v Values) ([]byte, error) {
	if v.Cluster == "" || v.Kubeconfig == "" || v.RuleFile == "" || v.Interval <= 0 {
		return nil, fmt.Errorf("prometheus configuration: cluster %q, kubeconfig %q, rule file %q and interval %s must all be set",
			v.Cluster, v.Kubeconfig, v.RuleFile, v.Interval)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(base, &cfg); err != nil {
		return nil, fmt.Errorf("prometheus configuration: %w", err)
	}
	global, _ := cfg["global"].(map[string]any)
	if global == nil {
		global = map[string]any{}
	}
	interval := v.Interval.String()
	global["scrape_interval"], global["evaluation_interval"] = interval, interval
	// A scrape may take its whole interval: at 1 s the default timeout of 10 s is refused.
	global["scrape_timeout"] = interval
	labels, _ := global["external_labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels["cluster"] = v.Cluster
	global["external_labels"] = labels
	cfg["global"] = global
	cfg["rule_files"] = []string{v.RuleFile}

	jobs, _ := cfg["scrape_configs"].([]any)
	if len(jobs) == 0 {
		return nil, errors.New("prometheus configuration: no scrape_configs")
	}
	discovered, federating := 0, 0
	for i, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("prometheus configuration: scrape_configs[%d] is not a mapping", i)
		}
		for k, sd := range asList(job["kubernetes_sd_configs"]) {
			m, ok := sd.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("prometheus configuration: scrape_configs[%d].kubernetes_sd_configs[%d] is not a mapping", i, k)
			}
			m["kubeconfig_file"] = v.Kubeconfig
			discovered++
		}
		if job["metrics_path"] == FederatePath {
			federating++
			targets := make([]string, len(v.Federate))
			for n, a := range v.Federate {
				targets[n] = a.String()
			}
			job["static_configs"] = []map[string]any{{"targets": targets}}
		}
	}
	switch {
	case discovered == 0:
		return nil, errors.New("prometheus configuration: no job discovers pods (kubernetes_sd_configs)")
	case len(v.Federate) > 0 && federating != 1:
		return nil, fmt.Errorf("prometheus configuration: %d jobs federate (metrics_path %s), want one to list %d members' servers in", federating, FederatePath, len(v.Federate))
	case len(v.Federate) == 0 && federating > 0:
		return nil, fmt.Errorf("prometheus configuration: a job federates (metrics_path %s) but no server to federate from was given", FederatePath)
	}
	return yaml.Marshal(cfg)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
