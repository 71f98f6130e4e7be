package clusters

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Cut severs the clients made from a config from the API server, as a crash or a
// partition would: while it is set every new request fails to dial, so a Lease holder
// can neither renew nor release. Streams already open (watches) go on, unless the cut
// is a restart of the API server (Restart).
type Cut struct {
	dead atomic.Bool
	// expired: the API server was restarted and this client's watch has not resumed
	// since: its resourceVersion is too old for the new watch cache.
	expired atomic.Bool

	mu   sync.Mutex
	open map[*cutBody]struct{}
}

// Config is a copy of cfg whose clients go through the cut.
func (c *Cut) Config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	inner := out.WrapTransport
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if inner != nil {
			rt = inner(rt)
		}
		return cutTransport{cut: c, next: rt}
	}
	return out
}

// Set cuts (true) or restores (false) the connection.
func (c *Cut) Set(dead bool) { c.dead.Store(dead) }

// Restart cuts the connection as an API server that goes down and comes back does:
// every response still being read (a watch's stream) ends now, new requests fail to
// dial until Set(false), and after that the first watch resumed from a resourceVersion
// is answered 410 Gone ("too old resource version", as from a restarted server's new
// watch cache), so the client's informer lists again: it sees every object again,
// unchanged. One informer a Cut: the next watch is the one that relisted.
func (c *Cut) Restart() {
	c.Set(true)
	c.expired.Store(true)
	c.mu.Lock()
	open := c.open
	c.open = nil
	c.mu.Unlock()
	for b := range open {
		_ = b.ReadCloser.Close()
	}
}

func (c *Cut) track(b *cutBody, open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !open {
		delete(c.open, b)
		return
	}
	if c.open == nil {
		c.open = map[*cutBody]struct{}{}
	}
	c.open[b] = struct{}{}
}

type cutTransport struct {
	cut  *Cut
	next http.RoundTripper
}

func (t cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cut.dead.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("cut off the API server by the test")}
	}
	q := r.URL.Query()
	if rv := q.Get("resourceVersion"); (q.Get("watch") == "true" || q.Get("watch") == "1") && rv != "" && rv != "0" &&
		t.cut.expired.CompareAndSwap(true, false) {
		return gone(r), nil // the client lists again, and watches from what that returned
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b := &cutBody{ReadCloser: resp.Body, cut: t.cut}
	t.cut.track(b, true)
	resp.Body = b
	return resp, nil
}

// gone is the API server's answer to a watch from a resourceVersion its watch cache no
// longer holds.
func gone(r *http.Request) *http.Response {
	const status = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"too old resource version","reason":"Expired","code":410}`
	return &http.Response{StatusCode: http.StatusGone, Status: "410 Gone", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(status)),
		ContentLength: int64(len(status)), Request: r}
}

// cutBody is a response body that Restart can end while it is being read.
type cutBody struct {
	io.ReadCloser
	cut *Cut
}

func (b *cutBody) Close() error {
	b.cut.track(b, false)
	return b.ReadCloser.Close()
}
