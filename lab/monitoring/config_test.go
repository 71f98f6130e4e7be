package monitoring_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/test/promcheck"
)

const component = "../../kustomize/components/monitoring"

// render is the component's configuration for role with the lab's values, and the rule
// file it names written beside it.
func render(t *testing.T, role string, federate []netip.AddrPort) (cfg []byte, dir string) {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(component, "prometheus", role+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join(component, "rules", role+".rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rules, err = monitoring.ShortenRules(rules, monitoring.LabScale); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	ruleFile, kubeconfig := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "kubeconfig")
	for path, data := range map[string][]byte{ruleFile: rules, kubeconfig: []byte("apiVersion: v1\nkind: Config\n")} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err = monitoring.Config(base, monitoring.Values{Cluster: "c7", Kubeconfig: kubeconfig, RuleFile: ruleFile,
		Interval: time.Second, Federate: federate})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

// TestLabConfigsAreTheComponentsWithTheLabsValues: the lab's configurations are the
// component's with the cluster, the kubeconfig, the shortened rules, 1 s intervals and
// the members to federate from filled in, and promtool checks them, rules included.
func TestLabConfigsAreTheComponentsWithTheLabsValues(t *testing.T) {
	members := []netip.AddrPort{netip.MustParseAddrPort("10.250.1.2:9090"), netip.MustParseAddrPort("10.250.2.2:9090")}
	for role, federate := range map[string][]netip.AddrPort{"member": nil, "hub": members} {
		cfg, dir := render(t, role, federate)
		var got struct {
			Global struct {
				ScrapeInterval     string            `json:"scrape_interval"`
				EvaluationInterval string            `json:"evaluation_interval"`
				ExternalLabels     map[string]string `json:"external_labels"`
			} `json:"global"`
			RuleFiles     []string `json:"rule_files"`
			ScrapeConfigs []struct {
				JobName     string `json:"job_name"`
				MetricsPath string `json:"metrics_path"`
				SD          []struct {
					Kubeconfig string `json:"kubeconfig_file"`
				} `json:"kubernetes_sd_configs"`
				Static []struct {
					Targets []string `json:"targets"`
				} `json:"static_configs"`
			} `json:"scrape_configs"`
		}
		if err := yaml.Unmarshal(cfg, &got); err != nil {
			t.Fatal(err)
		}
		if got.Global.ScrapeInterval != "1s" || got.Global.EvaluationInterval != "1s" || got.Global.ExternalLabels["cluster"] != "c7" {
			t.Errorf("%s: global %+v", role, got.Global)
		}
		if len(got.RuleFiles) != 1 || got.RuleFiles[0] != filepath.Join(dir, "rules.yaml") {
			t.Errorf("%s: rule_files %v", role, got.RuleFiles)
		}
		for _, job := range got.ScrapeConfigs {
			for _, sd := range job.SD {
				if sd.Kubeconfig != filepath.Join(dir, "kubeconfig") {
					t.Errorf("%s: job %s discovers with %q", role, job.JobName, sd.Kubeconfig)
				}
			}
			if job.MetricsPath == monitoring.FederatePath {
				if len(job.Static) != 1 || strings.Join(job.Static[0].Targets, ",") != "10.250.1.2:9090,10.250.2.2:9090" {
					t.Errorf("%s: federation targets %+v", role, job.Static)
				}
			}
		}
		file := filepath.Join(dir, "prometheus.yaml")
		if err := os.WriteFile(file, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promcheck.Promtool(t), "check", "config", file).CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check config: %v\n%s\n%s", role, err, out, cfg)
		}
	}
}

// TestConfigRefusesWhatCannotWork: a configuration without the values, or a hub's
// without members to federate from, is refused naming what is missing.
func TestConfigRefusesWhatCannotWork(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(component, "prometheus", "hub.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ok := monitoring.Values{Cluster: "hub", Kubeconfig: "/k", RuleFile: "/r", Interval: time.Second,
		Federate: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9090")}}
	for name, c := range map[string]struct {
		base []byte
		v    func(monitoring.Values) monitoring.Values
		want string
	}{
		"no cluster":       {base, func(v monitoring.Values) monitoring.Values { v.Cluster = ""; return v }, "cluster"},
		"hub without":      {base, func(v monitoring.Values) monitoring.Values { v.Federate = nil; return v }, "no server to federate from"},
		"nothing scraped":  {[]byte("global: {}\n"), func(v monitoring.Values) monitoring.Values { return v }, "no scrape_configs"},
		"no discovery":     {[]byte("scrape_configs: [{job_name: x, static_configs: [{targets: [a:1]}]}]\n"), func(v monitoring.Values) monitoring.Values { return v }, "discovers"},
		"not a config":     {[]byte("[1, 2]\n"), func(v monitoring.Values) monitoring.Values { return v }, "prometheus configuration"},
		"member federated": {[]byte("scrape_configs: [{job_name: x, kubernetes_sd_configs: [{role: pod}]}]\n"), func(v monitoring.Values) monitoring.Values { return v }, "0 jobs federate"},
	} {
		_, err := monitoring.Config(c.base, c.v(ok))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}
