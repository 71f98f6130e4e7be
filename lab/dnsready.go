package lab

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/miekg/dns"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// readyName is what "up" asks the cluster DNS until strait dns answers through CoreDNS.
const readyName = "strait-lab-ready.strait-system.svc.clusterset.local."

// waitClustersetDNS waits until the cluster DNS answers a clusterset.local question from
// a node (NXDOMAIN counts: strait dns answered). Until CoreDNS has loaded the block strait
// dns puts in its Corefile, such names get SERVFAIL: the first lookup of a newcomer would
// fail.
func (l *Lab) waitClustersetDNS(ctx context.Context, c topology.Cluster, timeout time.Duration) error {
	server := net.JoinHostPort(c.DNSServiceIP.String(), "53")
	ns := c.Nodes[0].Namespace
	deadline := time.Now().Add(timeout)
	start := time.Now()
	for {
		rcode, err := askOnce(ctx, ns, server)
		if err == nil && (rcode == dns.RcodeSuccess || rcode == dns.RcodeNameError) {
			l.progress("%s: clusterset.local answered through CoreDNS (%.1fs)", c.Name, time.Since(start).Seconds())
			return nil
		}
		if err == nil {
			err = fmt.Errorf("rcode %s", dns.RcodeToString[rcode])
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the cluster DNS %s does not answer %s: %w (kubectl -n %s logs deploy/strait-dns; CoreDNS log: %s)",
				c.Name, server, readyName, err, straitv1.SystemNamespace, l.state.LogPath(c.Name, "coredns"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func askOnce(ctx context.Context, ns, server string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := netns.Dial(ctx, ns, "udp", server)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	q := new(dns.Msg)
	q.SetQuestion(readyName, dns.TypeA)
	c := &dns.Conn{Conn: conn}
	if err := c.WriteMsg(q); err != nil {
		return 0, err
	}
	r, err := c.ReadMsg()
	if err != nil {
		return 0, err
	}
	return r.Rcode, nil
}
