package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// logBuffer is a probe server's log, written by its goroutines and read by the test.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProbesTellWhatTheKernelDid: two namespaces on a veth, a probe server in one. A
// clear path: the dial's source arrives as sent, and a full-sized don't-fragment datagram
// crosses. Cable packets over 1000 bytes dropped at the server: a black hole (the small
// datagram crosses, the full-sized one does not). A source NAT at the client: the hello
// arrives from the translated address while the connection fails (the answers go
// astray), and the client's conntrack shows the source the probe left with.
func TestProbesTellWhatTheKernelDid(t *testing.T) {
	require.Root(t, "nft")
	client, server := netns.New(t, "pcli"), netns.New(t, "psrv")
	netns.Veth(t, client, "eth0", server, "eth0")
	client.AddAddr(t, "eth0", "198.51.100.1/24")
	server.AddAddr(t, "eth0", "198.51.100.2/24")
	addr := "198.51.100.2:4243"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &logBuffer{}
	served := make(chan error, 1)
	go func() { served <- server.Do(func() error { return Serve(ctx, addr, log) }) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	inClient := func(fn func()) {
		if err := client.Do(func() error { fn(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var seen Seen
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if inClient(func() { seen, err = Dial(ctx, addr, "clear", time.Second) }); err == nil {
			break
		}
	}
	if err != nil || seen.Seen != "198.51.100.1" || seen.Local != "198.51.100.1" {
		t.Fatalf("a clear path: %+v, %v", seen, err)
	}
	if got := SeenIn(log.String())["clear"]; !slices.Equal(got, []string{"198.51.100.1"}) {
		t.Errorf("the server logged the hellos from %v, want 198.51.100.1", got)
	}
	var m MTU
	inClient(func() { m = PathMTU(ctx, addr, 300*time.Millisecond) })
	if !m.Small || !m.FullAnswered || m.PathMTU != 1500 {
		t.Errorf("a clear path: %+v, want path MTU 1500 and both answered", m)
	}

	if _, err := netns.Exec(ctx, server.Name, "add table ip t\nadd chain ip t in { type filter hook input priority filter; }\nadd rule ip t in udp dport 4243 meta length > 1000 drop\n", "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	inClient(func() { m = PathMTU(ctx, addr, 300*time.Millisecond) })
	if !m.Small || m.FullAnswered {
		t.Errorf("datagrams over 1000 bytes dropped: %+v, want the small one answered and the full-sized one not", m)
	}

	if _, err := netns.Exec(ctx, client.Name, "add table ip t\nadd chain ip t post { type nat hook postrouting priority srcnat; }\nadd rule ip t post ip daddr 198.51.100.2 snat to 198.51.100.99\n", "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	inClient(func() { _, err = Dial(ctx, addr, "natted", 500*time.Millisecond) })
	if err == nil {
		t.Error("the dial through the source NAT was answered; the answers should go astray")
	}
	if got := SeenIn(log.String())["natted"]; !slices.Equal(got, []string{"198.51.100.99"}) {
		t.Errorf("the server logged the natted hellos from %v, want 198.51.100.99", got)
	}
	var flows []Flow
	inClient(func() { flows, err = Flows([]string{"198.51.100.2"}) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(flows, func(f Flow) bool { return f.Src == "198.51.100.1" && f.ReplyDst == "198.51.100.99" }) {
		t.Errorf("the client's conntrack: %s; want a flow from 198.51.100.1 answered to 198.51.100.99", fmt.Sprint(flows))
	}
}
