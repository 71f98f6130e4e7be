package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Watcher is implemented by kernels that report changes made behind the agent's back.
type Watcher interface {
	// Watch calls changed (from another goroutine) after link or address changes and
	// after routes with protocol are removed, until ctx ends. Events the agent causes
	// itself arrive too; a converged pass causes none.
	Watch(ctx context.Context, protocol int, changed func()) error
}

// Watch subscribes to link, address and route events in the namespace.
func (l *Linux) Watch(ctx context.Context, protocol int, changed func()) error {
	var ns *netns.NsHandle
	if l.ns.IsOpen() {
		h := l.ns
		ns = &h
	}
	done := make(chan struct{})
	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	routes := make(chan netlink.RouteUpdate, 64)
	onErr := func(error) { changed() } // a lost subscription message: resync
	err := errors.Join(
		netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: ns, ErrorCallback: onErr}),
		netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: ns, ErrorCallback: onErr}),
		netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: ns, ErrorCallback: onErr}),
	)
	if err != nil {
		close(done)
		return fmt.Errorf("netlink subscribe: %w", err)
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-links:
				changed()
			case <-addrs:
				changed()
			case r := <-routes:
				if r.Type == unix.RTM_DELROUTE && int(r.Protocol) == protocol {
					changed()
				}
			}
		}
	}()
	return nil
}
