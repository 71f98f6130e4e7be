package workload

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFor(t *testing.T) {
	pod := func(image string, annotation string, port int32) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}
		if annotation != "" {
			p.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{Annotation: annotation}}
		}
		if port > 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		kind Kind
		port int
	}{
		{"whereami by image", pod("strait.io/lab/whereami:v1", "", 0), Whereami, WhereamiPort},
		{"whereami on its container port", pod("registry.example/whereami", "", 9000), Whereami, 9000},
		{"iperf3 by image", pod("strait.io/lab/iperf3", "", 0), IPerf3, IPerf3Port},
		{"annotation wins over image", pod("strait.io/lab/whereami", "idle", 8080), Idle, 0},
		{"anything else idles", pod("busybox", "", 0), Idle, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, port := For(tc.pod)
			if kind != tc.kind || port != tc.port {
				t.Errorf("For = %s:%d, want %s:%d", kind, port, tc.kind, tc.port)
			}
			if argv := Argv(kind, port, "strait", Identity{}); (argv == nil) != (kind == Idle) {
				t.Errorf("Argv(%s) = %v", kind, argv)
			}
		})
	}
}

func TestWhereamiAnswersWithCaller(t *testing.T) {
	id := Identity{Cluster: "c1", Node: "c1-gw-1", Namespace: "sample", Pod: "whereami-0", PodIP: "10.8.1.2"}
	srv := httptest.NewServer(Handler(id))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a Answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.Identity != id || a.Caller != "127.0.0.1" {
		t.Errorf("answer %+v, want %+v from 127.0.0.1", a, id)
	}
}

func TestAccessLogNamesEachRequestButNotProbes(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(AccessLog(Handler(Identity{Cluster: "c1"}), &log))
	defer srv.Close()
	get := func(agent string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/hello", nil)
		req.Header.Set("User-Agent", agent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get("kube-probe/1.37")
	get("curl/8.0")
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "GET /hello HTTP/1.1 from 127.0.0.1:") {
		t.Errorf("access log %q, want one line for the GET from 127.0.0.1 and none for the probe", log.String())
	}
}
