package kernel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Apply converges k to want. It adds and changes before it deletes, so traffic that
// stays wanted keeps flowing; it prunes every owned thing want does not list (also
// leftovers of an earlier process); a second Apply with the same want changes nothing.
// It goes on after an error and returns all of them.
func Apply(ctx context.Context, k Kernel, own Ownership, want State) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	links, err := k.Links(ctx)
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	have := map[string]Link{}
	for _, l := range links {
		have[l.Name] = l
	}
	for _, wl := range want.Links {
		if !own.OwnsLink(wl.Name) {
			add(fmt.Errorf("link %s is not ours", wl.Name))
			continue
		}
		add(applyLink(ctx, k, have, wl, want.Sysctls))
	}
	for _, key := range slices.Sorted(maps.Keys(want.Sysctls)) {
		v := want.Sysctls[key]
		cur, err := k.Sysctl(ctx, key)
		if err == nil && cur == v {
			continue
		}
		if err := k.SetSysctl(ctx, key, v); err != nil {
			add(fmt.Errorf("sysctl %s=%s: %w", key, v, err))
		}
	}
	// A zero Ownership field owns nothing: priority 0 is the kernel's local-table rule,
	// protocol 0 unspecified routes.
	if own.RulePriority > 0 {
		rules, err := k.Rules(ctx)
		add(err)
		if err == nil {
			add(applyRules(ctx, k, own, rules, want.Rules))
		}
	}
	if own.Protocol > 0 {
		routes, err := k.Routes(ctx, own.Protocol)
		add(err)
		if err == nil {
			add(applyRoutes(ctx, k, own, routes, want.Routes))
		}
	}
	if own.NFTable != "" {
		add(applyNFT(ctx, k, IPv4, own.NFTable, want.NFT))
		add(applyNFT(ctx, k, IPv6, own.NFTable, want.NFT6))
	}
	// Links last: their routes went first.
	wanted := map[string]bool{}
	for _, l := range want.Links {
		wanted[l.Name] = true
	}
	for _, l := range links {
		if own.OwnsLink(l.Name) && !wanted[l.Name] {
			if err := k.DeleteLink(ctx, l.Name); err != nil {
				add(fmt.Errorf("delete link %s: %w", l.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Cleanup removes everything of ours from k.
func Cleanup(ctx context.Context, k Kernel, own Ownership) error {
	return Apply(ctx, k, own, State{})
}

// applyLink converges one owned link. A device it makes gets its own sysctls from
// sysctls (net/ipv{4,6}/conf/<name>/...) before its addresses: a host that disables IPv6
// on new devices (net.ipv6.conf.default.disable_ipv6=1) refuses an IPv6 address until
// the device's disable_ipv6 is 0.
func applyLink(ctx context.Context, k Kernel, have map[string]Link, wl Link, sysctls map[string]string) error {
	var errs []error
	cur, ok := have[wl.Name]
	if ok && !sameDevice(cur, wl) {
		if err := k.DeleteLink(ctx, wl.Name); err != nil {
			return fmt.Errorf("recreate link %s: %w", wl.Name, err)
		}
		ok = false
	}
	if !ok {
		if err := k.AddLink(ctx, wl); err != nil {
			return fmt.Errorf("add link %s: %w", wl.Name, err)
		}
		cur = Link{Name: wl.Name, MTU: wl.MTU, Up: wl.Up}
		for _, key := range slices.Sorted(maps.Keys(sysctls)) {
			if strings.HasPrefix(key, "net/ipv4/conf/"+wl.Name+"/") || strings.HasPrefix(key, "net/ipv6/conf/"+wl.Name+"/") {
				if v, err := k.Sysctl(ctx, key); err != nil || v != sysctls[key] {
					if err := k.SetSysctl(ctx, key, sysctls[key]); err != nil {
						errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", key, sysctls[key], err))
					}
				}
			}
		}
	}
	if cur.MTU != wl.MTU || cur.Up != wl.Up {
		if err := k.SetLink(ctx, wl.Name, wl.MTU, wl.Up); err != nil {
			errs = append(errs, fmt.Errorf("set link %s: %w", wl.Name, err))
		}
	}
	for _, p := range wl.Addrs {
		if !slices.Contains(cur.Addrs, p) {
			if err := k.AddAddr(ctx, wl.Name, p); err != nil {
				errs = append(errs, fmt.Errorf("add %s to %s: %w", p, wl.Name, err))
			}
		}
	}
	for _, p := range cur.Addrs {
		if !slices.Contains(wl.Addrs, p) && !p.Addr().IsLinkLocalUnicast() {
			if err := k.DelAddr(ctx, wl.Name, p); err != nil {
				errs = append(errs, fmt.Errorf("delete %s from %s: %w", p, wl.Name, err))
			}
		}
	}
	if wl.MAC != "" && !strings.EqualFold(cur.MAC, wl.MAC) {
		if err := k.SetMAC(ctx, wl.Name, wl.MAC); err != nil {
			errs = append(errs, fmt.Errorf("set MAC of %s: %w", wl.Name, err))
		}
	}
	for _, n := range wl.Neighbors {
		if !slices.Contains(cur.Neighbors, n) {
			if err := k.SetNeighbor(ctx, wl.Name, n); err != nil {
				errs = append(errs, fmt.Errorf("set neighbor %s on %s: %w", n.IP, wl.Name, err))
			}
		}
	}
	for _, n := range cur.Neighbors {
		if !slices.ContainsFunc(wl.Neighbors, func(w Neighbor) bool { return w.IP == n.IP }) {
			if err := k.DelNeighbor(ctx, wl.Name, n); err != nil {
				errs = append(errs, fmt.Errorf("delete neighbor %s from %s: %w", n.IP, wl.Name, err))
			}
		}
	}
	for _, a := range wl.FDB {
		if !slices.Contains(cur.FDB, a) {
			if err := k.AddFDB(ctx, wl.Name, a); err != nil {
				errs = append(errs, fmt.Errorf("add fdb %s to %s: %w", a, wl.Name, err))
			}
		}
	}
	for _, a := range cur.FDB {
		if !slices.Contains(wl.FDB, a) {
			if err := k.DelFDB(ctx, wl.Name, a); err != nil {
				errs = append(errs, fmt.Errorf("delete fdb %s from %s: %w", a, wl.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// sameDevice says whether have can become want without recreating it.
func sameDevice(have, want Link) bool {
	if have.Kind != want.Kind {
		return false
	}
	if (have.VXLAN == nil) != (want.VXLAN == nil) {
		return false
	}
	return have.VXLAN == nil || *have.VXLAN == *want.VXLAN
}

func applyRules(ctx context.Context, k Kernel, own Ownership, have, want []Rule) error {
	var errs []error
	count := map[Rule]int{}
	for _, r := range have {
		if r.Priority == own.RulePriority {
			r.Family = r.Family.Or4()
			count[r]++
		}
	}
	wanted := make([]Rule, 0, len(want))
	for _, r := range want {
		r.Family = r.Family.Or4()
		if slices.Contains(wanted, r) {
			continue
		}
		wanted = append(wanted, r)
		if count[r] == 0 {
			if err := k.AddRule(ctx, r); err != nil {
				errs = append(errs, fmt.Errorf("add rule %s: %w", r, err))
			}
		}
	}
	for r, n := range count {
		keep := 0
		if slices.Contains(wanted, r) {
			keep = 1
		}
		for ; n > keep; n-- {
			if err := k.DeleteRule(ctx, r); err != nil {
				errs = append(errs, fmt.Errorf("delete rule %s: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

type routeKey struct {
	table int
	dst   string
}

func applyRoutes(ctx context.Context, k Kernel, own Ownership, have, want []Route) error {
	var errs []error
	cur := map[routeKey][]Route{}
	for _, r := range have {
		key := routeKey{r.Table, r.Dst.String()}
		cur[key] = append(cur[key], r)
	}
	wanted := map[routeKey]bool{}
	for _, r := range want {
		r.Protocol = own.Protocol
		key := routeKey{r.Table, r.Dst.String()}
		wanted[key] = true
		if rs := cur[key]; len(rs) == 1 && rs[0] == r {
			continue
		}
		if err := k.ReplaceRoute(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r, err))
		}
	}
	for key, rs := range cur {
		if wanted[key] {
			continue
		}
		for _, r := range rs {
			if err := k.DeleteRoute(ctx, r); err != nil {
				errs = append(errs, fmt.Errorf("delete route %s: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

// applyNFT converges our table of family f. A want of nil, or of a table with nothing in
// it, means no table: a node with nothing to do in a family has no table there.
func applyNFT(ctx context.Context, k Kernel, f Family, name string, want *NFTable) error {
	have, err := k.NFTable(ctx, f, name)
	if err != nil {
		return fmt.Errorf("read nftables table %s %s: %w", f, name, err)
	}
	if want != nil {
		if len(want.Sets) == 0 && len(want.Chains) == 0 {
			want = nil
		} else {
			w := *want
			w.Name, w.Family = name, f
			want = &w
		}
	}
	tx := NFTDiff(f, name, have, want)
	if tx.Empty() {
		return nil
	}
	if err := k.NFTApply(ctx, tx); err != nil {
		return fmt.Errorf("nftables table %s %s: %w", f, name, err)
	}
	return nil
}

// NFTDiff is the transaction that turns have into want (either may be nil), our table of
// family f. Sets and chains whose definition changed mean recreating the table in the
// same transaction; otherwise only changed elements and the rules of changed chains are
// written.
func NFTDiff(f Family, name string, have, want *NFTable) NFTTx {
	tx := NFTTx{Table: name, Family: f.Or4()}
	switch {
	case want == nil && have == nil:
		return tx
	case want == nil:
		tx.DeleteTable = true
		return tx
	case have == nil:
		tx.Create = want
		return tx
	case !sameShape(have, want):
		tx.DeleteTable, tx.Create = true, want
		return tx
	}
	for _, ws := range want.Sets {
		i := slices.IndexFunc(have.Sets, func(s NFTSet) bool { return s.Name == ws.Name })
		hs := have.Sets[i]
		cur := make(map[string]string, len(hs.Elements))
		for _, e := range hs.Elements {
			cur[e.Key] = e.Value
		}
		ch := NFTElementsChange{Set: ws}
		seen := make(map[string]bool, len(ws.Elements))
		for _, e := range ws.Elements {
			seen[e.Key] = true
			v, ok := cur[e.Key]
			if ok && v == e.Value {
				continue
			}
			if ok {
				ch.Delete = append(ch.Delete, NFTElement{Key: e.Key, Value: v})
			}
			ch.Add = append(ch.Add, e)
		}
		for _, e := range hs.Elements {
			if !seen[e.Key] {
				ch.Delete = append(ch.Delete, e)
			}
		}
		if len(ch.Add)+len(ch.Delete) > 0 {
			tx.Elements = append(tx.Elements, ch)
		}
	}
	for _, wc := range want.Chains {
		i := slices.IndexFunc(have.Chains, func(c NFTChain) bool { return c.Name == wc.Name })
		if !slices.EqualFunc(have.Chains[i].Rules, wc.Rules, func(have, want NFTRule) bool { return have.Text == want.ID(f) }) {
			tx.Chains = append(tx.Chains, wc)
		}
	}
	return tx
}

// sameShape: the same sets (name, types, flags) and base chains, ignoring contents.
func sameShape(a, b *NFTable) bool {
	setDef := func(s NFTSet) NFTSet { s.Elements = nil; return s }
	chainDef := func(c NFTChain) NFTChain { c.Rules = nil; return c }
	if len(a.Sets) != len(b.Sets) || len(a.Chains) != len(b.Chains) {
		return false
	}
	for _, s := range b.Sets {
		if !slices.ContainsFunc(a.Sets, func(o NFTSet) bool { return setDef(o).equal(setDef(s)) }) {
			return false
		}
	}
	for _, c := range b.Chains {
		if !slices.ContainsFunc(a.Chains, func(o NFTChain) bool {
			x, y := chainDef(o), chainDef(c)
			return x.Name == y.Name && x.Type == y.Type && x.Hook == y.Hook && x.Priority == y.Priority
		}) {
			return false
		}
	}
	return true
}

func (s NFTSet) equal(o NFTSet) bool {
	return s.Name == o.Name && s.Key == o.Key && s.Value == o.Value && s.Interval == o.Interval
}
