package workload

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
