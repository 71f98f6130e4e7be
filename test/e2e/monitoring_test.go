package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// monitoringClient is a client of cluster with prometheus-operator's kinds.
func monitoringClient(t *testing.T, cluster string) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Lab.State().KubeconfigPath(cluster))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMonitorsSelectTheLabsDaemons: the monitoring components, installed in every
// cluster with `kubectl apply -k` beside Strait on the monitoring.coreos.com CRDs, hold
// monitors whose selectors find Strait's running daemons, each at a port of the name
// the monitor scrapes (a Service's for a ServiceMonitor, with ready endpoints behind
// it; a container's for a PodMonitor), and the alerts as a PrometheusRule.
func TestMonitorsSelectTheLabsDaemons(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	want := map[string][]string{ // the daemons each cluster's monitors must find
		topology.HubName: {labtest.HubApp},
		"c1":             {labtest.AgentApp, labtest.DNSApp},
		"c2":             {labtest.AgentApp, labtest.DNSApp},
	}
	for cluster, apps := range want {
		c := monitoringClient(t, cluster)
		ns := client.InNamespace(straitv1.SystemNamespace)
		var found []string
		pms := &monitoringv1.PodMonitorList{}
		if err := c.List(ctx, pms, ns); err != nil {
			t.Fatalf("%s: PodMonitors: %v", cluster, err)
		}
		for _, pm := range pms.Items {
			pods := selectPods(t, c, cluster, &pm.Spec.Selector)
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				port := ptr.Deref(ep.Port, "")
				for _, p := range pods {
					if !slices.ContainsFunc(p.Spec.Containers, func(ct corev1.Container) bool {
						return slices.ContainsFunc(ct.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port })
					}) {
						t.Errorf("%s: PodMonitor %s scrapes port %q, which pod %s has not", cluster, pm.Name, port, p.Name)
					}
				}
			}
			found = append(found, podApps(pods)...)
		}
		sms := &monitoringv1.ServiceMonitorList{}
		if err := c.List(ctx, sms, ns); err != nil {
			t.Fatalf("%s: ServiceMonitors: %v", cluster, err)
		}
		for _, sm := range sms.Items {
			sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			svcs := &corev1.ServiceList{}
			if err := c.List(ctx, svcs, ns, client.MatchingLabelsSelector{Selector: sel}); err != nil {
				t.Fatal(err)
			}
			if len(svcs.Items) == 0 {
				t.Errorf("%s: ServiceMonitor %s selects no Service (%s)", cluster, sm.Name, sel)
			}
			for _, svc := range svcs.Items {
				for _, ep := range sm.Spec.Endpoints {
					if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
						t.Errorf("%s: ServiceMonitor %s scrapes port %q, which Service %s has not", cluster, sm.Name, ep.Port, svc.Name)
					}
				}
				pods := selectPods(t, c, cluster, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
				found = append(found, podApps(pods)...)
			}
		}
		for _, app := range apps {
			if !slices.Contains(found, app) {
				t.Errorf("%s: no monitor finds %s's pods (found %v)", cluster, app, found)
			}
		}
		rules := &monitoringv1.PrometheusRuleList{}
		if err := c.List(ctx, rules, ns); err != nil || len(rules.Items) != 1 || len(rules.Items[0].Spec.Groups) == 0 {
			t.Errorf("%s: PrometheusRules %d (%v), want Strait's one", cluster, len(rules.Items), err)
		}
	}
}

// selectPods lists the running pods of strait-system that sel selects, failing t when
// there are none.
func selectPods(t *testing.T, c client.Client, cluster string, sel *metav1.LabelSelector) []corev1.Pod {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(straitv1.SystemNamespace), client.MatchingLabelsSelector{Selector: s}); err != nil {
		t.Fatal(err)
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		t.Errorf("%s: %s selects no running pod", cluster, s)
	}
	return running
}

func podApps(pods []corev1.Pod) []string {
	var apps []string
	for _, p := range pods {
		apps = append(apps, labels.Set(p.Labels).Get("app.kubernetes.io/name"))
	}
	return apps
}

// TestHubPrometheusSeesEveryMember: the hub's Prometheus, federating the members',
// holds every daemon of every member as up, labelled with its member, and the members'
// gateways and the hub's view of them.
func TestHubPrometheusSeesEveryMember(t *testing.T) {
	env.Require(t)
	api := env.Prometheus(t, topology.HubName)
	want := map[string]float64{}
	for _, c := range env.Topo.Clusters {
		want[fmt.Sprintf("%s/%s", c.Name, labtest.AgentApp)] = float64(len(c.Nodes))
		want[fmt.Sprintf("%s/%s", c.Name, labtest.DNSApp)] = float64(len(env.StraitPods(t, c.Name, labtest.DNSApp, "")))
		want[c.Name+"/gateways"] = 1
	}
	// The hub's own jobs (kustomize/components/monitoring/prometheus/hub.yaml): strait
	// hub, as many up as it has pods, and the federation of each member's Prometheus.
	// Exactly these series, none more: a series federated twice, or a job counted in the
	// wrong cluster, fails.
	want["/"+labtest.HubApp] = float64(len(env.StraitPods(t, topology.HubName, labtest.HubApp, "")))
	want["/strait-federate"] = float64(len(env.Topo.Clusters))
	want["/connected members"] = float64(len(env.Topo.Clusters))
	// Each query's series, keyed cluster/what: the federated members' series carry
	// their cluster; the hub's own carry none (its external label is added only on
	// their way out).
	queries := []struct{ q, what string }{
		{`count by (cluster, job) (up{job=~"strait-.+"} == 1)`, "job"},
		{`sum by (cluster) (strait_agent_gateway_active)`, "gateways"},
		{`count(max by (member) (strait_hub_member_connected) == 1)`, "connected members"},
	}
	var got map[string]float64
	// The federation scrapes every second; a daemon restarted by a test before may take
	// a scrape to be up again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = map[string]float64{}
		for _, q := range queries {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			v, _, _, err := api.Query(ctx, q.q, time.Now())
			cancel()
			if err != nil {
				t.Fatalf("hub's Prometheus: %s: %v", q.q, err)
			}
			vec, _ := v.(model.Vector)
			for _, s := range vec {
				what := q.what
				if what == "job" {
					what = string(s.Metric["job"])
				}
				got[string(s.Metric["cluster"])+"/"+what] = float64(s.Value)
			}
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	var lines []string
	for k, w := range want {
		lines = append(lines, fmt.Sprintf("%s: %v, want %v", k, got[k], w))
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: %v, want no such series", k, g))
		}
	}
	slices.Sort(lines)
	t.Errorf("the hub's Prometheus (cluster/series):\n%s\nall it has: %v", strings.Join(lines, "\n"), got)
}
