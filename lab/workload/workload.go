package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Default ports.
const (
	WhereamiPort = 8080
	IPerf3Port   = 5201
)

// Identity is what whereami tells about itself.
type Identity struct {
	Cluster   string `json:"cluster"`
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	PodIP     string `json:"podIP"`
}

// Answer is whereami's reply.
type Answer struct {
	Identity
	// Caller is the address the request came from, as this pod saw it.
	Caller string `json:"caller"`
}

// Handler answers every request with the Answer as one JSON line.
func Handler(id Identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Answer{Identity: id, Caller: host})
	})
}

// AccessLog writes one line per request to w (the container's log, for kubectl logs):
// who called, what and when. The kubelet's probes are left out, as they would drown the
// requests people make.
func AccessLog(h http.Handler, w io.Writer) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(rw, r)
		if strings.HasPrefix(r.UserAgent(), "kube-probe/") {
			return
		}
		fmt.Fprintf(w, "%s %s %s %s from %s\n", time.Now().UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, r.Proto, r.RemoteAddr)
	})
}

// ServeWhereami serves whereami on listen, over HTTP and UDP, until ctx ends, logging
// every request to accessLog (nil: no log).
func ServeWhereami(ctx context.Context, listen string, id Identity, accessLog io.Writer) error {
	h := Handler(id)
	if accessLog != nil {
		h = AccessLog(h, accessLog)
	}
	srv := &http.Server{Addr: listen, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	udp, err := net.ListenPacket("udp", listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = udp.Close()
	}()
	go func() { _ = ServeUDP(udp, id, accessLog) }()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeUDP answers every datagram on pc with the Answer as one JSON line, so that a UDP
// Service in front of whereami can be checked as an HTTP one is (who answered, who it
// saw calling), until pc is closed.
func ServeUDP(pc net.PacketConn, id Identity, accessLog io.Writer) error {
	buf := make([]byte, 1500)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		host, _, err := net.SplitHostPort(from.String())
		if err != nil {
			host = from.String()
		}
		body, _ := json.Marshal(Answer{Identity: id, Caller: host})
		if _, err := pc.WriteTo(append(body, '\n'), from); err != nil {
			continue // the caller is gone; the next one may not be
		}
		if accessLog != nil {
			fmt.Fprintf(accessLog, "%s UDP from %s\n", time.Now().UTC().Format(time.RFC3339Nano), from)
		}
	}
}
