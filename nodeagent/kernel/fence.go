package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// FenceTable is the nftables table of a gateway's fence, in both families: table ip
// strait-fence and table ip6 strait-fence, so that a cable over an IPv6 underlay is
// fenced as one over IPv4 is.
const FenceTable = "strait-fence"

// fenceSet holds the cable's port while the gateway's term lasts: each element carries
// the rest of the term as its timeout, and the kernel forgets it when that runs out.
const fenceSet = "term"

// fencePriority runs the fence before conntrack (-200): a fenced packet leaves no entry.
const fencePriority = -300

// Fencer keeps a gateway's cable to the term of its Lease in the kernel itself, so that a
// data path that outlives its agent (a kernel VXLAN device, charon) stops carrying
// traffic when the term ends, with no process left to say so.
type Fencer interface {
	// Fence lets UDP to port (the cable's: received on it, and sent to the remote
	// gateways on it) in and out of this node until until, and drops it after; a zero
	// until drops it now.
	Fence(ctx context.Context, port uint16, until time.Time) error
	// Unfence removes the fence: the node no longer runs a cable.
	Unfence(ctx context.Context) error
}

// Fence implements Fencer: tables ip and ip6 strait-fence each hold a set "term" whose
// one element, the port, times out at until, and input and output chains that drop UDP
// to the port when the set does not hold it. Every call is one nftables transaction
// over both tables.
func (l *Linux) Fence(_ context.Context, port uint16, until time.Time) error {
	l.fenceMu.Lock()
	defer l.fenceMu.Unlock()
	if l.fencedPort == port {
		// The table stands: renew the element alone (a renewal every RetryPeriod
		// keeps the rules and their counters).
		err := l.fence(port, until, false)
		if err == nil || !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	// A new port, a first call, or a table someone deleted.
	l.fencedPort = 0
	if err := l.fence(port, until, true); err != nil {
		return err
	}
	l.fencedPort = port
	return nil
}

// fence writes the term's element, after building the table when build is set (the old
// one is deleted in the same transaction, so there is no moment without rules).
func (l *Linux) fence(port uint16, until time.Time, build bool) error {
	c, err := l.nft()
	if err != nil {
		return err
	}
	key := binary.BigEndian.AppendUint16(nil, port)
	// The kernel's timeouts are milliseconds; one that rounds to zero would be the set's
	// default, which is none.
	rest := time.Until(until).Truncate(time.Millisecond)
	for _, family := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		t := &nftables.Table{Name: FenceTable, Family: family}
		set := &nftables.Set{Table: t, Name: fenceSet, KeyType: nftables.TypeInetService, HasTimeout: true}
		if build {
			c.AddTable(t)
			c.DelTable(t)
			c.AddTable(t)
			if err := c.AddSet(set, nil); err != nil {
				return fmt.Errorf("fence set: %w", err)
			}
			for _, hook := range []string{"input", "output"} {
				ch := c.AddChain(nftChain(t, NFTChain{Name: hook, Type: "filter", Hook: hook, Priority: fencePriority}))
				r := NFTRule{Text: fmt.Sprintf("udp dport %d udp dport != @%s counter drop", port, fenceSet), Exprs: fenceExprs(key)}
				c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r.Exprs,
					UserData: userdata.AppendString(nil, userdata.TypeComment, r.ID(IPv4))})
			}
		} else {
			c.FlushSet(set)
		}
		if rest > 0 {
			if err := c.SetAddElements(set, []nftables.SetElement{{Key: key, Timeout: rest}}); err != nil {
				return fmt.Errorf("fence element: %w", err)
			}
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("fence on udp port %d: %w", port, err)
	}
	return nil
}

// fenceExprs is "udp dport <port> udp dport != @term counter drop".
func fenceExprs(port []byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: port},
		&expr.Lookup{SourceRegister: reg1, SetName: fenceSet, Invert: true},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// Unfence implements Fencer.
func (l *Linux) Unfence(_ context.Context) error {
	c, err := l.nft()
	if err != nil {
		return err
	}
	l.fenceMu.Lock()
	defer l.fenceMu.Unlock()
	l.fencedPort = 0
	for _, family := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		t := &nftables.Table{Name: FenceTable, Family: family}
		c.AddTable(t)
		c.DelTable(t)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("removing the fence: %w", err)
	}
	return nil
}
