package kernel

import (
	"context"
	"fmt"
	"time"

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

// resubscribeAfter spaces the subscriptions after one was lost, so that a socket that
// keeps failing costs a retry now and then, not a core.
const resubscribeAfter = 100 * time.Millisecond

// Watch subscribes to link, address and route events in the namespace. A subscription
// ends when its socket overflows (ENOBUFS after a burst of changes, such as a gateway's
// routes to 254 peers at once) or fails: Watch then subscribes again and calls changed,
// since events were lost. (It used to read on from the closed channels, which answer at
// once, and called changed in a loop that took most of a core.)
func (l *Linux) Watch(ctx context.Context, protocol int, changed func()) error {
	sub, err := l.subscribe()
	if err != nil {
		return err
	}
	go func() {
		for {
			watchUntilLost(ctx, sub, protocol, changed)
			if ctx.Err() != nil {
				return
			}
			l.lostWatches.Add(1)
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(resubscribeAfter):
				}
				if sub, err = l.subscribe(); err == nil {
					break
				}
			}
			changed()
		}
	}()
	return nil
}

// subscription is one set of netlink subscriptions; closing done ends them.
type subscription struct {
	done   chan struct{}
	links  chan netlink.LinkUpdate
	addrs  chan netlink.AddrUpdate
	routes chan netlink.RouteUpdate
}

func (l *Linux) subscribe() (subscription, error) {
	var ns *netns.NsHandle
	if l.ns.IsOpen() {
		h := l.ns
		ns = &h
	}
	s := subscription{done: make(chan struct{}), links: make(chan netlink.LinkUpdate, 64),
		addrs: make(chan netlink.AddrUpdate, 64), routes: make(chan netlink.RouteUpdate, 64)}
	// A lost message ends its subscription (its channel closes): watchUntilLost sees that.
	ignore := func(error) {}
	if err := netlink.LinkSubscribeWithOptions(s.links, s.done, netlink.LinkSubscribeOptions{Namespace: ns, ErrorCallback: ignore}); err != nil {
		close(s.done)
		return subscription{}, fmt.Errorf("netlink subscribe to links: %w", err)
	}
	if err := netlink.AddrSubscribeWithOptions(s.addrs, s.done, netlink.AddrSubscribeOptions{Namespace: ns, ErrorCallback: ignore}); err != nil {
		close(s.addrs) // never started: end() drains the links alone
		close(s.routes)
		s.end()
		return subscription{}, fmt.Errorf("netlink subscribe to addresses: %w", err)
	}
	if err := netlink.RouteSubscribeWithOptions(s.routes, s.done, netlink.RouteSubscribeOptions{Namespace: ns, ErrorCallback: ignore}); err != nil {
		close(s.routes)
		s.end()
		return subscription{}, fmt.Errorf("netlink subscribe to routes: %w", err)
	}
	return s, nil
}

// watchUntilLost calls changed for every event of sub until ctx ends or one of sub's
// subscriptions ends; it then ends them all.
func watchUntilLost(ctx context.Context, sub subscription, protocol int, changed func()) {
	defer sub.end()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-sub.links:
			if !ok {
				return
			}
			changed()
		case _, ok := <-sub.addrs:
			if !ok {
				return
			}
			changed()
		case r, ok := <-sub.routes:
			if !ok {
				return
			}
			if r.Type == unix.RTM_DELROUTE && int(r.Protocol) == protocol {
				changed()
			}
		}
	}
}

// end closes the subscriptions' sockets and reads their channels until they close: a
// subscription's goroutine blocks on a full channel and would never see its socket
// closed.
func (s subscription) end() {
	close(s.done)
	go func() {
		for range s.links {
		}
	}()
	go func() {
		for range s.addrs {
		}
	}()
	go func() {
		for range s.routes {
		}
	}()
}
