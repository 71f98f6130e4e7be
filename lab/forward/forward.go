package forward

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/straitnet/strait/internal/netns"
)

// Forwarder accepts on a host address and dials Target inside Namespace (empty: the
// caller's own network namespace).
type Forwarder struct {
	Listen    string
	Namespace string
	Target    string
}

// Run serves until ctx ends.
func (f Forwarder) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.Listen)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); _ = ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.splice(ctx, c)
		}()
	}
}

func (f Forwarder) splice(ctx context.Context, in net.Conn) {
	defer in.Close()
	var out net.Conn
	var err error
	if f.Namespace == "" {
		var d net.Dialer
		out, err = d.DialContext(ctx, "tcp", f.Target)
	} else {
		out, err = netns.Dial(ctx, f.Namespace, "tcp", f.Target)
	}
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	select {
	case <-done:
		<-done
	case <-ctx.Done():
	}
}
