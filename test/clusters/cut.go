package clusters

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Cut severs the clients made from a config from the API server, as a crash or a
// partition would: while it is set every new request fails to dial, so a Lease holder
// can neither renew nor release. Streams already open (watches) go on.
type Cut struct {
	dead atomic.Bool
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

type cutTransport struct {
	cut  *Cut
	next http.RoundTripper
}

func (t cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cut.dead.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("cut off the API server by the test")}
	}
	return t.next.RoundTrip(r)
}
