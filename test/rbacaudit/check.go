package rbacaudit

import (
	"fmt"
	"strings"
)

// Allowance keeps a grant no audited request used, and says why it must stay: a path
// the labs do not take (an uninstall step, a rare error, a renewal months away).
type Allowance struct {
	// User is the identity (ServiceAccount), Grant the grant's String.
	User, Grant string
	Why         string
}

// Report is the comparison of roles with what their holders did.
type Report struct {
	// Refused are the refusals that fail (see Usage.Refusals): every identity that
	// holds a grant is under test.
	Refused []Refusal
	// Unused are grants no request used and no allowance keeps.
	Unused []Grant
	// Stale are allowances that keep nothing: their grant was used, or no role grants it.
	Stale []string
	// Ungranted are requests of identities under test that the roles given do not
	// cover: Kubernetes' default roles allowed them (discovery, self reviews). Not a
	// failure; shown so a reader sees everything the identity did.
	Ungranted []Use
	// ListsBehindWatches are list grants no list used but whose watch was used: an
	// informer. client-go's informers (WatchListClient, on by default since client-go
	// 0.35) stream their initial list inside the watch where the API server can
	// (WatchList, on by default in Kubernetes 1.32 and from 1.34) and list where it
	// cannot (1.30, 1.31, 1.33, or the gate off): the list grant is the same informer's.
	// Not a failure; shown.
	ListsBehindWatches []Grant
}

// Failed says whether the roles do not match what was done.
func (r Report) Failed() bool { return len(r.Refused)+len(r.Unused)+len(r.Stale) > 0 }

// Check compares the grants with the usage.
func Check(u *Usage, grants []Grant, allow []Allowance) Report {
	underTest := map[string]bool{}
	for _, g := range grants {
		underTest[g.User] = true
	}
	var r Report
	r.Refused = u.Refusals(func(user string) bool { return underTest[user] })
	used := make([]bool, len(grants))
	for _, use := range u.Used {
		if !underTest[use.User] {
			continue
		}
		covered := false
		for i, g := range grants {
			if g.Covers(use.Access) {
				used[i], covered = true, true
			}
		}
		if !covered {
			r.Ungranted = append(r.Ungranted, use)
		}
	}
	for i, g := range grants {
		if used[i] || g.Verb != "list" {
			continue
		}
		w := g
		w.Verb = "watch"
		for _, use := range u.Used {
			if use.Verb == "watch" && w.Covers(use.Access) {
				used[i] = true
				r.ListsBehindWatches = append(r.ListsBehindWatches, g)
				break
			}
		}
	}
	kept := map[string]bool{}
	for _, a := range allow {
		kept[a.User+" "+a.Grant] = false
	}
	for i, g := range grants {
		key := g.User + " " + g.String()
		_, allowed := kept[key]
		switch {
		case allowed && used[i]:
			r.Stale = append(r.Stale, fmt.Sprintf("%s: %q is used now; drop its allowance", g.User, g.String()))
			kept[key] = true
		case allowed:
			kept[key] = true
		case !used[i]:
			r.Unused = append(r.Unused, g)
		}
	}
	for _, a := range allow {
		if !kept[a.User+" "+a.Grant] {
			r.Stale = append(r.Stale, fmt.Sprintf("%s: %q is granted by no role", a.User, a.Grant))
		}
	}
	return r
}

// String lists what failed, then what default roles allowed.
func (r Report) String() string {
	var b strings.Builder
	for _, f := range r.Refused {
		fmt.Fprintf(&b, "refused: %s\n", f)
	}
	for _, g := range r.Unused {
		fmt.Fprintf(&b, "granted, never used: %s %q (%s); remove it, or allow it with the reason\n", g.User, g.String(), g.Role)
	}
	for _, s := range r.Stale {
		fmt.Fprintf(&b, "stale allowance: %s\n", s)
	}
	for _, g := range r.ListsBehindWatches {
		fmt.Fprintf(&b, "listed inside its watch (an informer; older API servers answer a list): %s %q\n", g.User, g.String())
	}
	for _, u := range r.Ungranted {
		fmt.Fprintf(&b, "allowed by no role given (a default role): %s %q ×%d\n", u.User, u.Access.String(), u.Count)
	}
	return b.String()
}
