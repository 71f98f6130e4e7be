package kernel

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Fake is an in-memory Kernel. It keeps the constraints of the real one that decide
// ordering: a route needs its device (and an on-link or covered next hop), deleting a
// device takes its routes, addresses, FDB entries and sysctls with it, and an nftables
// transaction fails as a whole when it names a missing table, set, chain or element.
type Fake struct {
	mu      sync.Mutex
	links   map[string]*Link
	routes  []Route
	rules   []Rule
	sysctls map[string]string
	tables  map[tableKey]*NFTable
	calls   int
}

// tableKey names an nftables table: the same name in ip and ip6 are two tables.
type tableKey struct {
	family Family
	name   string
}

// NewFake is a Fake holding the given (underlay) links.
func NewFake(links ...Link) *Fake {
	f := &Fake{links: map[string]*Link{}, sysctls: map[string]string{}, tables: map[tableKey]*NFTable{}}
	for _, l := range links {
		f.links[l.Name] = cloneLink(l)
		f.addDeviceSysctls(l.Name)
	}
	return f
}

// Calls counts the mutating calls made so far; a converged Apply adds none.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *Fake) mutate() { f.calls++ }

func cloneLink(l Link) *Link {
	c := l
	if l.VXLAN != nil {
		v := *l.VXLAN
		c.VXLAN = &v
	}
	c.Addrs = slices.Clone(l.Addrs)
	c.FDB = slices.Clone(l.FDB)
	c.Neighbors = slices.Clone(l.Neighbors)
	return &c
}

func (f *Fake) Links(context.Context) ([]Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Link
	for _, l := range f.links {
		out = append(out, *cloneLink(*l))
	}
	slices.SortFunc(out, func(a, b Link) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *Fake) AddLink(_ context.Context, l Link) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.links[l.Name]; ok {
		return fmt.Errorf("add link %s: file exists", l.Name)
	}
	if l.Kind != "vxlan" || l.VXLAN == nil {
		return fmt.Errorf("add link %s: only vxlan links can be created", l.Name)
	}
	if _, ok := f.links[l.VXLAN.Parent]; !ok && l.VXLAN.Parent != "" {
		return fmt.Errorf("add link %s: parent %s: no such device", l.Name, l.VXLAN.Parent)
	}
	f.mutate()
	n := cloneLink(l)
	n.Addrs, n.FDB, n.Neighbors = nil, nil, nil
	if n.MAC == "" {
		n.MAC = "02:00:00:00:00:01" // the kernel's random one
	}
	f.links[l.Name] = n
	f.addDeviceSysctls(l.Name)
	return nil
}

// addDeviceSysctls are the keys a new device gets under net/ipv4/conf and net/ipv6/conf.
func (f *Fake) addDeviceSysctls(name string) {
	f.sysctls["net/ipv4/conf/"+name+"/rp_filter"] = "1"
	f.sysctls["net/ipv6/conf/"+name+"/disable_ipv6"] = "0"
	f.sysctls["net/ipv6/conf/"+name+"/forwarding"] = "0"
}

func (f *Fake) SetLink(_ context.Context, name string, mtu int, up bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[name]
	if !ok {
		return fmt.Errorf("set link %s: no such device", name)
	}
	f.mutate()
	l.MTU, l.Up = mtu, up
	return nil
}

func (f *Fake) SetMAC(_ context.Context, name, mac string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[name]
	if !ok {
		return fmt.Errorf("set MAC of %s: no such device", name)
	}
	f.mutate()
	l.MAC = mac
	return nil
}

func (f *Fake) DeleteLink(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.links[name]; !ok {
		return nil
	}
	f.mutate()
	delete(f.links, name)
	f.routes = slices.DeleteFunc(f.routes, func(r Route) bool { return r.Dev == name })
	for k := range f.sysctls {
		if strings.HasPrefix(k, "net/ipv4/conf/"+name+"/") || strings.HasPrefix(k, "net/ipv6/conf/"+name+"/") {
			delete(f.sysctls, k)
		}
	}
	return nil
}

func (f *Fake) AddAddr(_ context.Context, link string, p netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok {
		return fmt.Errorf("add addr %s: %s: no such device", p, link)
	}
	if slices.Contains(l.Addrs, p) {
		return fmt.Errorf("add addr %s to %s: file exists", p, link)
	}
	f.mutate()
	l.Addrs = append(l.Addrs, p)
	return nil
}

func (f *Fake) DelAddr(_ context.Context, link string, p netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok || !slices.Contains(l.Addrs, p) {
		return nil
	}
	f.mutate()
	l.Addrs = slices.DeleteFunc(l.Addrs, func(a netip.Prefix) bool { return a == p })
	return nil
}

func (f *Fake) AddFDB(_ context.Context, link string, dst netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok || l.Kind != "vxlan" {
		return fmt.Errorf("add fdb %s: %s: no such vxlan device", dst, link)
	}
	if slices.Contains(l.FDB, dst) {
		return fmt.Errorf("add fdb %s to %s: file exists", dst, link)
	}
	f.mutate()
	l.FDB = append(l.FDB, dst)
	return nil
}

func (f *Fake) DelFDB(_ context.Context, link string, dst netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok || !slices.Contains(l.FDB, dst) {
		return nil
	}
	f.mutate()
	l.FDB = slices.DeleteFunc(l.FDB, func(a netip.Addr) bool { return a == dst })
	return nil
}

func (f *Fake) SetNeighbor(_ context.Context, link string, n Neighbor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok {
		return fmt.Errorf("set neighbor %s: %s: no such device", n.IP, link)
	}
	f.mutate()
	l.Neighbors = append(slices.DeleteFunc(l.Neighbors, func(o Neighbor) bool { return o.IP == n.IP }), n)
	return nil
}

func (f *Fake) DelNeighbor(_ context.Context, link string, n Neighbor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[link]
	if !ok || !slices.Contains(l.Neighbors, n) {
		return nil
	}
	f.mutate()
	l.Neighbors = slices.DeleteFunc(l.Neighbors, func(o Neighbor) bool { return o == n })
	return nil
}

func (f *Fake) Routes(_ context.Context, protocol int) ([]Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Route
	for _, r := range f.routes {
		if r.Protocol == protocol {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *Fake) ReplaceRoute(_ context.Context, r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[r.Dev]
	if !ok {
		return fmt.Errorf("route %s: device %q: no such device", r.Dst, r.Dev)
	}
	if r.Gw.IsValid() && FamilyOf(r.Gw) != r.Family() {
		return fmt.Errorf("route %s via %s: invalid argument (a next hop of another family)", r.Dst, r.Gw)
	}
	if r.Gw.IsValid() && !r.Onlink && !slices.ContainsFunc(l.Addrs, func(p netip.Prefix) bool { return p.Masked().Contains(r.Gw) }) {
		return fmt.Errorf("route %s via %s dev %s: network unreachable", r.Dst, r.Gw, r.Dev)
	}
	f.mutate()
	for i, o := range f.routes {
		if o.Table == r.Table && o.Dst == r.Dst {
			f.routes[i] = r
			return nil
		}
	}
	f.routes = append(f.routes, r)
	return nil
}

func (f *Fake) DeleteRoute(_ context.Context, r Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.routes)
	f.routes = slices.DeleteFunc(f.routes, func(o Route) bool { return o.Table == r.Table && o.Dst == r.Dst })
	if len(f.routes) != n {
		f.mutate()
	}
	return nil
}

func (f *Fake) Rules(context.Context) ([]Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rules), nil
}

func (f *Fake) AddRule(_ context.Context, r Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mutate()
	r.Family = r.Family.Or4()
	f.rules = append(f.rules, r) // the kernel allows duplicates too
	return nil
}

func (f *Fake) DeleteRule(_ context.Context, r Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Family = r.Family.Or4()
	if i := slices.Index(f.rules, r); i >= 0 {
		f.mutate()
		f.rules = slices.Delete(f.rules, i, i+1)
	}
	return nil
}

func (f *Fake) Sysctl(_ context.Context, key string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.sysctls[key]
	if !ok {
		return "", fmt.Errorf("sysctl %s: no such file", key)
	}
	return v, nil
}

func (f *Fake) SetSysctl(_ context.Context, key, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sysctls[key]; !ok {
		return fmt.Errorf("sysctl %s: no such file", key)
	}
	f.mutate()
	f.sysctls[key] = value
	return nil
}

func (f *Fake) NFTable(_ context.Context, family Family, name string) (*NFTable, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tables[tableKey{family.Or4(), name}]
	if !ok {
		return nil, nil
	}
	return cloneTable(t, true), nil
}

func cloneTable(t *NFTable, textOnly bool) *NFTable {
	c := &NFTable{Name: t.Name, Family: t.Family.Or4()}
	for _, s := range t.Sets {
		s.Elements = slices.Clone(s.Elements)
		c.Sets = append(c.Sets, s)
	}
	for _, ch := range t.Chains {
		rules := make([]NFTRule, len(ch.Rules))
		for i, r := range ch.Rules {
			rules[i] = NFTRule{Text: r.Text}
			if !textOnly {
				rules[i].Exprs = r.Exprs
			}
		}
		ch.Rules = rules
		c.Chains = append(c.Chains, ch)
	}
	return c
}

func (f *Fake) NFTApply(_ context.Context, tx NFTTx) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Work on a copy so a failing transaction changes nothing.
	tables := map[tableKey]*NFTable{}
	for k, v := range f.tables {
		tables[k] = cloneTable(v, true)
	}
	key := tableKey{tx.Family.Or4(), tx.Table}
	if tx.DeleteTable {
		delete(tables, key)
	}
	if tx.Create != nil {
		if _, ok := tables[key]; ok {
			return fmt.Errorf("nft: create table %s %s: file exists", key.family, tx.Table)
		}
		c := *tx.Create
		c.Family = key.family
		tables[key] = storedTable(&c)
	}
	t := tables[key]
	for _, ch := range tx.Elements {
		if t == nil {
			return fmt.Errorf("nft: table %s: no such file", tx.Table)
		}
		i := slices.IndexFunc(t.Sets, func(s NFTSet) bool { return s.Name == ch.Set.Name })
		if i < 0 {
			return fmt.Errorf("nft: set %s: no such file", ch.Set.Name)
		}
		s := &t.Sets[i]
		for _, e := range ch.Delete {
			j := slices.IndexFunc(s.Elements, func(o NFTElement) bool { return o.Key == e.Key })
			if j < 0 {
				return fmt.Errorf("nft: set %s: delete element %s: no such file", s.Name, e.Key)
			}
			s.Elements = slices.Delete(s.Elements, j, j+1)
		}
		for _, e := range ch.Add {
			if j := slices.IndexFunc(s.Elements, func(o NFTElement) bool { return o.Key == e.Key }); j >= 0 {
				if s.Elements[j] != e {
					return fmt.Errorf("nft: set %s: element %s: file exists", s.Name, e.Key)
				}
				continue
			}
			s.Elements = append(s.Elements, e)
		}
	}
	for _, ch := range tx.Chains {
		if t == nil {
			return fmt.Errorf("nft: table %s: no such file", tx.Table)
		}
		i := slices.IndexFunc(t.Chains, func(c NFTChain) bool { return c.Name == ch.Name })
		if i < 0 {
			return fmt.Errorf("nft: chain %s: no such file", ch.Name)
		}
		t.Chains[i].Rules = storedTable(&NFTable{Family: key.family, Chains: []NFTChain{ch}}).Chains[0].Rules
	}
	if !tx.Empty() {
		f.mutate()
	}
	f.tables = tables
	return nil
}

// storedTable is a desired table as the kernel keeps it: rules as their IDs.
func storedTable(t *NFTable) *NFTable {
	c := cloneTable(t, true)
	for i := range c.Chains {
		for j := range c.Chains[i].Rules {
			c.Chains[i].Rules[j] = NFTRule{Text: t.Chains[i].Rules[j].ID(t.Family)}
		}
	}
	return c
}
