package lab

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/lab/image"
)

// TestRealNodeSamplesRunLocalImagesThatTellWhoTheyAre checks the sample workloads for
// real nodes: every container runs a local image that is never pulled, whereami learns
// its cluster, node, namespace, pod and IP from its env, and the serving pods have
// readiness probes.
func TestRealNodeSamplesRunLocalImagesThatTellWhoTheyAre(t *testing.T) {
	templates := map[string]corev1.PodTemplateSpec{}
	for _, obj := range sampleObjects("c7") {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			templates[o.Name] = o.Spec.Template
		case *appsv1.StatefulSet:
			templates[o.Name] = o.Spec.Template
		}
	}
	want := map[string]string{WhereamiCS: image.Whereami, "whereami": image.Whereami, Client: image.Tools, IPerf3: image.IPerf3}
	if len(templates) != len(want) {
		t.Fatalf("workloads %v, want %v", keys(templates), keys(want))
	}
	for name, img := range want {
		c := templates[name].Spec.Containers[0]
		if c.Image != img || c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("%s runs %q (pull %s), want %s never pulled", name, c.Image, c.ImagePullPolicy, img)
		}
		if serving := name != Client; serving != (c.ReadinessProbe != nil) {
			t.Errorf("%s: readiness probe %v, want one exactly on serving pods", name, c.ReadinessProbe)
		}
	}
	env := map[string]string{}
	for _, e := range templates[WhereamiCS].Spec.Containers[0].Env {
		switch {
		case e.Value != "":
			env[e.Name] = e.Value
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	for k, v := range map[string]string{"CLUSTER_NAME": "c7", "NODE_NAME": "spec.nodeName", "POD_NAMESPACE": "metadata.namespace",
		"POD_NAME": "metadata.name", "POD_IP": "status.podIP"} {
		if env[k] != v {
			t.Errorf("whereami env %s = %q, want %q", k, env[k], v)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
