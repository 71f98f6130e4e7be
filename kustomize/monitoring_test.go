package kustomize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMonitorsSelectTheDaemonsMetricsPorts builds a member and a hub with the monitoring
// component, reads every PodMonitor and ServiceMonitor as prometheus-operator's types
// (an unknown field fails), and checks each one selects Strait's pods through a port
// that is their metrics port: a PodMonitor's port names a container port of the pods it
// selects; a ServiceMonitor's names a port of the Services it selects, whose selector
// picks the pods and whose target port is their metrics port. Every daemon is scraped.
func TestMonitorsSelectTheDaemonsMetricsPorts(t *testing.T) {
	for dir, daemons := range map[string][]string{
		"testdata/monitoring-member": {"strait-agent", "strait-dns"},
		"testdata/monitoring-hub":    {"strait-hub"},
	} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			pods := podTemplates(t, objs)
			scraped := map[string]bool{}
			for _, o := range objs {
				switch o.GetKind() {
				case "PodMonitor":
					var pm monitoringv1.PodMonitor
					strictFrom(t, o, &pm)
					sel := selector(t, o, &pm.Spec.Selector)
					for _, ep := range pm.Spec.PodMetricsEndpoints {
						if ep.Port == nil {
							t.Errorf("PodMonitor %s: an endpoint without a port name", pm.Name)
							continue
						}
						for _, name := range matching(t, pm.Name, pods, pm.Namespace, sel, *ep.Port) {
							scraped[name] = true
						}
					}
				case "PrometheusRule":
					var pr monitoringv1.PrometheusRule
					strictFrom(t, o, &pr)
					if len(pr.Spec.Groups) == 0 {
						t.Errorf("PrometheusRule %s has no rule groups", pr.Name)
					}
				case "ServiceMonitor":
					var sm monitoringv1.ServiceMonitor
					strictFrom(t, o, &sm)
					sel := selector(t, o, &sm.Spec.Selector)
					var services []corev1.Service
					for _, s := range objs {
						var svc corev1.Service
						if s.GetKind() != "Service" || s.GetNamespace() != sm.Namespace {
							continue
						}
						strictFrom(t, s, &svc)
						if sel.Matches(labels.Set(svc.Labels)) {
							services = append(services, svc)
						}
					}
					if len(services) == 0 {
						t.Errorf("ServiceMonitor %s selects no Service (%s)", sm.Name, sel)
					}
					for _, ep := range sm.Spec.Endpoints {
						for _, svc := range services {
							port, ok := servicePort(svc, ep.Port)
							if !ok {
								t.Errorf("ServiceMonitor %s: Service %s has no port %q", sm.Name, svc.Name, ep.Port)
								continue
							}
							if port.TargetPort.StrVal == "" {
								t.Errorf("Service %s: port %s targets %s, not a named port", svc.Name, port.Name, port.TargetPort.String())
								continue
							}
							for _, name := range matching(t, "Service "+svc.Name, pods, svc.Namespace, labels.SelectorFromSet(svc.Spec.Selector), port.TargetPort.StrVal) {
								scraped[name] = true
							}
						}
					}
				}
			}
			for _, d := range daemons {
				if !scraped[d] {
					t.Errorf("nothing scrapes %s", d)
				}
			}
		})
	}
}

// podTemplate is a workload's pods as its template makes them.
type podTemplate struct {
	name, namespace string
	labels          map[string]string
	ports           []corev1.ContainerPort
}

func podTemplates(t *testing.T, objs []*unstructured.Unstructured) []podTemplate {
	var out []podTemplate
	for _, o := range objs {
		var tmpl corev1.PodTemplateSpec
		switch o.GetKind() {
		case "DaemonSet":
			var ds appsv1.DaemonSet
			strictFrom(t, o, &ds)
			tmpl = ds.Spec.Template
		case "Deployment":
			var d appsv1.Deployment
			strictFrom(t, o, &d)
			tmpl = d.Spec.Template
		default:
			continue
		}
		p := podTemplate{name: o.GetName(), namespace: o.GetNamespace(), labels: tmpl.Labels}
		for _, c := range tmpl.Spec.Containers {
			p.ports = append(p.ports, c.Ports...)
		}
		out = append(out, p)
	}
	return out
}

// matching names the workloads in namespace whose pods sel picks, and fails for each
// that has no container port named port, or when there is none.
func matching(t *testing.T, who string, pods []podTemplate, namespace string, sel labels.Selector, port string) []string {
	t.Helper()
	var names []string
	for _, p := range pods {
		if p.namespace != namespace || !sel.Matches(labels.Set(p.labels)) {
			continue
		}
		found := false
		for _, cp := range p.ports {
			found = found || cp.Name == port
		}
		if !found {
			t.Errorf("%s: the pods of %s have no container port %q", who, p.name, port)
			continue
		}
		names = append(names, p.name)
	}
	if len(names) == 0 {
		t.Errorf("%s selects no pods in %s (%s)", who, namespace, sel)
	}
	return names
}

func servicePort(svc corev1.Service, name string) (corev1.ServicePort, bool) {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return corev1.ServicePort{}, false
}

func selector(t *testing.T, o *unstructured.Unstructured, ls *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		t.Fatalf("%s %s: selector %v: %v (an empty one selects everything)", o.GetKind(), o.GetName(), ls, err)
	}
	return sel
}

// strictFrom decodes o into typed, failing on a field the type does not have.
func strictFrom(t *testing.T, o *unstructured.Unstructured, typed any) {
	t.Helper()
	data, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(typed); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), fmt.Errorf("as %T: %w", typed, err))
	}
}
