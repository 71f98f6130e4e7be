package workload

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

func TestWhereamiAnswersUDPDatagrams(t *testing.T) {
	id := Identity{Cluster: "c2", Pod: "whereami-1"}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- ServeUDP(pc, id, &log) }()
	for range 2 {
		c, err := net.Dial("udp", pc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("?")); err != nil {
			t.Fatal(err)
		}
		var a Answer
		if err := json.NewDecoder(c).Decode(&a); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if a.Identity != id || a.Caller != "127.0.0.1" {
			t.Errorf("answer %+v, want %+v from 127.0.0.1", a, id)
		}
	}
	pc.Close()
	if err := <-done; err == nil {
		t.Error("ServeUDP returned no error after its socket was closed")
	}
	if n := strings.Count(log.String(), "UDP from 127.0.0.1:"); n != 2 {
		t.Errorf("access log %q, want two UDP lines", log.String())
	}
}
