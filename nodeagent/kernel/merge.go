package kernel

import "slices"

// Merge joins partial States computed by different parts of the agent (route agent,
// gateway, globalnet) into one. Links and sets of the same name are merged; chains of
// the same name get the rules of each part in argument order.
func Merge(parts ...State) State {
	var out State
	for _, p := range parts {
		for _, l := range p.Links {
			i := slices.IndexFunc(out.Links, func(o Link) bool { return o.Name == l.Name })
			if i < 0 {
				out.Links = append(out.Links, l)
				continue
			}
			o := &out.Links[i]
			for _, a := range l.Addrs {
				if !slices.Contains(o.Addrs, a) {
					o.Addrs = append(o.Addrs, a)
				}
			}
			for _, a := range l.FDB {
				if !slices.Contains(o.FDB, a) {
					o.FDB = append(o.FDB, a)
				}
			}
			for _, n := range l.Neighbors {
				if !slices.Contains(o.Neighbors, n) {
					o.Neighbors = append(o.Neighbors, n)
				}
			}
			if o.MAC == "" {
				o.MAC = l.MAC
			}
		}
		out.Routes = append(out.Routes, p.Routes...)
		for _, r := range p.Rules {
			if !slices.Contains(out.Rules, r) {
				out.Rules = append(out.Rules, r)
			}
		}
		for k, v := range p.Sysctls {
			if out.Sysctls == nil {
				out.Sysctls = map[string]string{}
			}
			out.Sysctls[k] = v
		}
		if p.NFT != nil {
			out.NFT = mergeTables(out.NFT, p.NFT)
		}
		if p.NFT6 != nil {
			out.NFT6 = mergeTables(out.NFT6, p.NFT6)
		}
	}
	return out
}

func mergeTables(a, b *NFTable) *NFTable {
	if a == nil {
		c := *b
		c.Sets, c.Chains = slices.Clone(b.Sets), slices.Clone(b.Chains)
		return &c
	}
	for _, s := range b.Sets {
		if i := slices.IndexFunc(a.Sets, func(o NFTSet) bool { return o.Name == s.Name }); i >= 0 {
			a.Sets[i].Elements = append(slices.Clone(a.Sets[i].Elements), s.Elements...)
		} else {
			a.Sets = append(a.Sets, s)
		}
	}
	for _, c := range b.Chains {
		if i := slices.IndexFunc(a.Chains, func(o NFTChain) bool { return o.Name == c.Name }); i >= 0 {
			a.Chains[i].Rules = append(slices.Clone(a.Chains[i].Rules), c.Rules...)
		} else {
			a.Chains = append(a.Chains, c)
		}
	}
	return a
}
