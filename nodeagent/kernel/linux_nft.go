package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/userdata"
	mdnetlink "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// elementsPerMessage keeps one set-element message under the 16-bit netlink attribute
// length (about 2,000 elements overflow it).
const elementsPerMessage = 1000

// socketBuffer is forced on the nftables socket so a batch of tens of thousands of
// elements fits.
const socketBuffer = 16 << 20

func (l *Linux) nft() (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(func(c *mdnetlink.Conn) error {
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = errors.Join(
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer),
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer))
		}); err != nil {
			return err
		}
		return serr
	})}
	if l.ns.IsOpen() {
		opts = append(opts, nftables.WithNetNSFd(int(l.ns)))
	}
	return nftables.New(opts...)
}

var hooks = map[string]*nftables.ChainHook{
	"prerouting": nftables.ChainHookPrerouting, "input": nftables.ChainHookInput,
	"forward": nftables.ChainHookForward, "output": nftables.ChainHookOutput,
	"postrouting": nftables.ChainHookPostrouting,
}

func hookName(h *nftables.ChainHook) string {
	for n, v := range hooks {
		if h != nil && *h == *v {
			return n
		}
	}
	return ""
}

// tableFamily is f as google/nftables names it.
func tableFamily(f Family) nftables.TableFamily {
	if f.Or4() == IPv6 {
		return nftables.TableFamilyIPv6
	}
	return nftables.TableFamilyIPv4
}

func (l *Linux) NFTable(_ context.Context, family Family, name string) (*NFTable, error) {
	c, err := l.nft()
	if err != nil {
		return nil, err
	}
	t, err := c.ListTableOfFamily(name, tableFamily(family))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, fmt.Errorf("list table: %w", err)
	}
	out := &NFTable{Name: name, Family: family.Or4()}
	sets, err := c.GetSets(t)
	if err != nil {
		return nil, fmt.Errorf("list sets: %w", err)
	}
	for _, s := range sets {
		if s.Anonymous {
			continue
		}
		s.Table = t
		ns := NFTSet{Name: s.Name, Key: s.KeyType.Name, Interval: s.Interval}
		if s.IsMap {
			ns.Value = s.DataType.Name
		}
		els, err := c.GetSetElements(s)
		if err != nil {
			return nil, fmt.Errorf("elements of %s: %w", s.Name, err)
		}
		ns.Elements, err = decodeElements(family, ns, els)
		if err != nil {
			return nil, fmt.Errorf("elements of %s: %w", s.Name, err)
		}
		out.Sets = append(out.Sets, ns)
	}
	chains, err := c.ListChainsOfTableFamily(tableFamily(family))
	if err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	for _, ch := range chains {
		if ch.Table.Name != name {
			continue
		}
		nc := NFTChain{Name: ch.Name, Type: string(ch.Type), Hook: hookName(ch.Hooknum)}
		if ch.Priority != nil {
			nc.Priority = int(*ch.Priority)
		}
		rules, err := c.GetRules(t, ch)
		if err != nil {
			return nil, fmt.Errorf("rules of %s: %w", ch.Name, err)
		}
		for _, r := range rules {
			text, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			nc.Rules = append(nc.Rules, NFTRule{Text: text})
		}
		out.Chains = append(out.Chains, nc)
	}
	return out, nil
}

func (l *Linux) NFTApply(_ context.Context, tx NFTTx) error {
	c, err := l.nft()
	if err != nil {
		return err
	}
	t := &nftables.Table{Name: tx.Table, Family: tableFamily(tx.Family)}
	if tx.DeleteTable {
		c.AddTable(t) // so deleting an absent table is no error
		c.DelTable(t)
	}
	if tx.Create != nil {
		c.AddTable(t)
		for _, s := range tx.Create.Sets {
			ns, err := nftSet(t, s)
			if err != nil {
				return err
			}
			if err := c.AddSet(ns, nil); err != nil {
				return fmt.Errorf("set %s: %w", s.Name, err)
			}
			if err := addElements(c, ns, s, s.Elements, false); err != nil {
				return err
			}
		}
		for _, ch := range tx.Create.Chains {
			nc := c.AddChain(nftChain(t, ch))
			if err := addRules(c, t, tx.Family, nc, ch.Rules); err != nil {
				return err
			}
		}
	}
	for _, ec := range tx.Elements {
		ns, err := nftSet(t, ec.Set)
		if err != nil {
			return err
		}
		if err := addElements(c, ns, ec.Set, ec.Delete, true); err != nil {
			return err
		}
		if err := addElements(c, ns, ec.Set, ec.Add, false); err != nil {
			return err
		}
	}
	for _, ch := range tx.Chains {
		nc := nftChain(t, ch)
		c.FlushChain(nc)
		if err := addRules(c, t, tx.Family, nc, ch.Rules); err != nil {
			return err
		}
	}
	return c.Flush()
}

func nftChain(t *nftables.Table, ch NFTChain) *nftables.Chain {
	p := nftables.ChainPriority(int32(ch.Priority))
	return &nftables.Chain{Name: ch.Name, Table: t, Type: nftables.ChainType(ch.Type),
		Hooknum: hooks[ch.Hook], Priority: &p}
}

func addRules(c *nftables.Conn, t *nftables.Table, f Family, ch *nftables.Chain, rules []NFTRule) error {
	for _, r := range rules {
		id := r.ID(f)
		if len(id) > 250 {
			return fmt.Errorf("rule text longer than 240 bytes: %q", r.Text)
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r.Exprs,
			UserData: userdata.AppendString(nil, userdata.TypeComment, id)})
	}
	return nil
}

// setType is the kernel's type of a set key or map value written as nft prints it:
// one of the basic types below, or a concatenation of them ("ipv4_addr . mark").
func setType(text string) (nftables.SetDatatype, bool) {
	var parts []nftables.SetDatatype
	for _, name := range strings.Split(text, " . ") {
		t, ok := basicSetType(name)
		if !ok {
			return nftables.SetDatatype{}, false
		}
		parts = append(parts, t)
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	t, err := nftables.ConcatSetType(parts...)
	return t, err == nil
}

// basicSetType is one of the element types the agent's sets use. "integer" has no length
// nft can print inside a concatenation ("nft list" aborts), so concatenations use "mark".
func basicSetType(name string) (nftables.SetDatatype, bool) {
	switch name {
	case "ipv4_addr":
		return nftables.TypeIPAddr, true
	case "ipv6_addr":
		return nftables.TypeIP6Addr, true
	case "integer":
		return nftables.TypeInteger, true
	case "mark":
		return nftables.TypeMark, true
	case "inet_service":
		return nftables.TypeInetService, true
	}
	return nftables.SetDatatype{}, false
}

func nftSet(t *nftables.Table, s NFTSet) (*nftables.Set, error) {
	kt, ok := setType(s.Key)
	if !ok {
		return nil, fmt.Errorf("set %s: unsupported key type %q", s.Name, s.Key)
	}
	ns := &nftables.Set{Table: t, Name: s.Name, KeyType: kt, Interval: s.Interval,
		Concatenation: strings.Contains(s.Key, " . ")}
	if s.Value != "" {
		vt, ok := setType(s.Value)
		if !ok {
			return nil, fmt.Errorf("map %s: unsupported value type %q", s.Name, s.Value)
		}
		ns.IsMap, ns.DataType = true, vt
	}
	if s.Key == "integer" {
		ns.KeyByteOrder = binaryutil.NativeEndian
	}
	return ns, nil
}

// addElements queues elements for adding (or deleting) in chunks that fit one message.
func addElements(c *nftables.Conn, ns *nftables.Set, s NFTSet, els []NFTElement, del bool) error {
	var enc []nftables.SetElement
	for _, e := range els {
		x, err := encodeElement(s, e)
		if err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
		enc = append(enc, x...)
	}
	for chunk := range slices.Chunk(enc, elementsPerMessage) {
		var err error
		if del {
			err = c.SetDeleteElements(ns, chunk)
		} else {
			err = c.SetAddElements(ns, chunk)
		}
		if err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
	}
	return nil
}

func encodeElement(s NFTSet, e NFTElement) ([]nftables.SetElement, error) {
	var out nftables.SetElement
	if s.Value != "" {
		v, err := encodeValue(s.Value, e.Value)
		if err != nil {
			return nil, err
		}
		out.Val = v
	}
	if s.Interval {
		first, last, err := parseRange(e.Key)
		if err != nil {
			return nil, err
		}
		out.Key = first.AsSlice()
		els := []nftables.SetElement{out}
		if end := last.Next(); end.IsValid() {
			els = append(els, nftables.SetElement{Key: end.AsSlice(), IntervalEnd: true})
		}
		return els, nil
	}
	k, err := encodeValue(s.Key, e.Key)
	if err != nil {
		return nil, err
	}
	out.Key = k
	return []nftables.SetElement{out}, nil
}

// encodeValue encodes an element's key or value. In a concatenation every part takes a
// whole number of 4-byte registers, padded with zeros.
func encodeValue(typ, text string) ([]byte, error) {
	types, texts := strings.Split(typ, " . "), strings.Split(text, " . ")
	if len(types) != len(texts) {
		return nil, fmt.Errorf("bad %s %q", typ, text)
	}
	if len(types) == 1 {
		return encodeBasic(typ, text)
	}
	var out []byte
	for i := range types {
		b, err := encodeBasic(types[i], texts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		out = append(out, make([]byte, padding(len(b)))...)
	}
	return out, nil
}

func padding(n int) int { return (4 - n%4) % 4 }

func encodeBasic(typ, text string) ([]byte, error) {
	switch typ {
	case "ipv4_addr":
		a, err := netip.ParseAddr(text)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("bad ipv4_addr %q", text)
		}
		return a.AsSlice(), nil
	case "ipv6_addr":
		a, err := netip.ParseAddr(text)
		if err != nil || !a.Is6() || a.Is4In6() {
			return nil, fmt.Errorf("bad ipv6_addr %q", text)
		}
		return a.AsSlice(), nil
	case "integer", "mark":
		n, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad %s %q", typ, text)
		}
		return binary.NativeEndian.AppendUint32(nil, uint32(n)), nil
	case "inet_service":
		n, err := strconv.ParseUint(text, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad inet_service %q", text)
		}
		return binary.BigEndian.AppendUint16(nil, uint16(n)), nil
	}
	return nil, fmt.Errorf("unsupported type %q", typ)
}

func decodeValue(typ string, b []byte) (string, error) {
	types := strings.Split(typ, " . ")
	if len(types) == 1 {
		return decodeBasic(typ, b)
	}
	var texts []string
	for _, t := range types {
		bt, _ := basicSetType(t)
		n := bt.Bytes
		if n == 0 || len(b) < int(n) {
			return "", fmt.Errorf("bad %s % x", typ, b)
		}
		x, err := decodeBasic(t, b[:n])
		if err != nil {
			return "", err
		}
		texts = append(texts, x)
		b = b[min(len(b), int(n)+padding(int(n))):]
	}
	return strings.Join(texts, " . "), nil
}

func decodeBasic(typ string, b []byte) (string, error) {
	switch typ {
	case "ipv4_addr":
		a, ok := netip.AddrFromSlice(b)
		if !ok || !a.Is4() {
			return "", fmt.Errorf("bad ipv4_addr % x", b)
		}
		return a.String(), nil
	case "ipv6_addr":
		a, ok := netip.AddrFromSlice(b)
		if !ok || !a.Is6() {
			return "", fmt.Errorf("bad ipv6_addr % x", b)
		}
		return a.String(), nil
	case "integer", "mark":
		if len(b) != 4 {
			return "", fmt.Errorf("bad %s % x", typ, b)
		}
		return strconv.FormatUint(uint64(binary.NativeEndian.Uint32(b)), 10), nil
	case "inet_service":
		if len(b) != 2 {
			return "", fmt.Errorf("bad inet_service % x", b)
		}
		return strconv.FormatUint(uint64(binary.BigEndian.Uint16(b)), 10), nil
	}
	return "", fmt.Errorf("unsupported type %q", typ)
}

func decodeElements(f Family, s NFTSet, els []nftables.SetElement) ([]NFTElement, error) {
	var out []NFTElement
	if !s.Interval {
		for _, e := range els {
			k, err := decodeValue(s.Key, e.Key)
			if err != nil {
				return nil, err
			}
			ne := NFTElement{Key: k}
			if s.Value != "" {
				if ne.Value, err = decodeValue(s.Value, e.Val); err != nil {
					return nil, err
				}
			}
			out = append(out, ne)
		}
		return out, nil
	}
	// Intervals come back as start and end elements in any order.
	type bound struct {
		a   netip.Addr
		end bool
		val []byte
	}
	var bs []bound
	for _, e := range els {
		a, ok := netip.AddrFromSlice(e.Key)
		if !ok {
			return nil, fmt.Errorf("bad interval key % x", e.Key)
		}
		bs = append(bs, bound{a: a, end: e.IntervalEnd, val: e.Val})
	}
	slices.SortFunc(bs, func(x, y bound) int {
		if c := x.a.Compare(y.a); c != 0 {
			return c
		}
		if x.end == y.end {
			return 0
		}
		if x.end {
			return -1 // an end at the same key closes the previous interval first
		}
		return 1
	})
	for i := 0; i < len(bs); i++ {
		if bs[i].end {
			continue
		}
		last := maxAddr(f)
		if i+1 < len(bs) && bs[i+1].end {
			last = bs[i+1].a.Prev()
		}
		ne := NFTElement{Key: RangeText(bs[i].a, last)}
		if s.Value != "" {
			v, err := decodeValue(s.Value, bs[i].val)
			if err != nil {
				return nil, err
			}
			ne.Value = v
		}
		out = append(out, ne)
	}
	return out, nil
}

// RangeText renders [first, last] (one family) as a prefix when it is one, else
// "first-last".
func RangeText(first, last netip.Addr) string {
	for bits := 0; bits <= first.BitLen(); bits++ {
		p := netip.PrefixFrom(first, bits)
		if p.Masked().Addr() == first && LastAddr(p) == last {
			if bits == first.BitLen() {
				return first.String()
			}
			return p.String()
		}
	}
	return first.String() + "-" + last.String()
}

// maxAddr is the family's last address.
func maxAddr(f Family) netip.Addr {
	if f.Or4() == IPv6 {
		return LastAddr(netip.MustParsePrefix("::/0"))
	}
	return netip.MustParseAddr("255.255.255.255")
}

func parseRange(s string) (netip.Addr, netip.Addr, error) {
	if a, b, ok := strings.Cut(s, "-"); ok {
		x, err1 := netip.ParseAddr(a)
		y, err2 := netip.ParseAddr(b)
		if err1 != nil || err2 != nil || y.Less(x) {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("bad range %q", s)
		}
		return x, y, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Addr{}, netip.Addr{}, err
		}
		return p.Masked().Addr(), LastAddr(p), nil
	}
	a, err := netip.ParseAddr(s)
	return a, a, err
}
