package rbacaudit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Access is one kind of request an identity made, as RBAC judges it.
type Access struct {
	// User is the authenticated user, system:serviceaccount:NAMESPACE:NAME for a
	// ServiceAccount.
	User string `json:"user"`
	Verb string `json:"verb"`
	// Group is the API group, "" for the core group.
	Group string `json:"group,omitempty"`
	// Resource has the subresource after a slash ("peers/status").
	Resource string `json:"resource"`
	// Namespace is "" for a cluster-scoped resource or a request across namespaces.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name, also of a list or watch that selects one name with
	// metadata.name (which is how RBAC's resourceNames can cover it); "" for others.
	Name string `json:"name,omitempty"`
}

func (a Access) String() string {
	return line(a.Verb, a.Group, a.Resource, a.Namespace, a.Name, a.Namespace == "")
}

// line is an access or a grant the way kubectl auth can-i takes it:
// "VERB RESOURCE[.GROUP][/SUB] [NAME] -n NS" or "... -A" for all namespaces.
func line(verb, group, resource, ns, name string, all bool) string {
	res, sub, _ := strings.Cut(resource, "/")
	s := verb + " " + res
	if group != "" {
		s += "." + group
	}
	if sub != "" {
		s += "/" + sub
	}
	if name != "" {
		s += " " + name
	}
	if all {
		return s + " -A"
	}
	return s + " -n " + ns
}

// Use is an access and how often it was made, in which clusters.
type Use struct {
	Access
	Count    int      `json:"count"`
	Clusters []string `json:"clusters"`
}

// Refusal is a request the API server refused with 403 Forbidden.
type Refusal struct {
	Access
	Cluster string    `json:"cluster"`
	At      time.Time `json:"at"`
	// ByRBAC: the authorizer refused it; otherwise admission did (a webhook, a policy).
	ByRBAC bool   `json:"byRBAC"`
	Reason string `json:"reason"`
	// Excused says why the refusal is not the roles' fault, or is "": an RBAC object
	// that could grant it had been deleted moments before (an uninstall: a daemon on its
	// way out is refused) or written again moments before after a deletion (a reinstall,
	// before the authorizer's informer has it), or the API server had just started and
	// was not ready (its RBAC informers still filling: a refusal then is upstream's,
	// kubernetes#121635), or the write met its namespace being deleted and was among the
	// first of the writer's there (ExcusedNamespaceTerminating).
	Excused string `json:"excused,omitempty"`
}

// The reasons a refusal is excused.
const (
	ExcusedRolesChanging     = "an RBAC object that could grant it was deleted, or written again after a deletion, moments before"
	ExcusedAPIServerNotReady = "the API server had started and was not ready yet"
	// ExcusedNamespaceTerminating: admission's, the write met its namespace's deletion
	// (racedNamespaceDeletion), not the roles.
	ExcusedNamespaceTerminating = "the first writes into a namespace being deleted, before the writer could know"
)

// Interval is a span of time.
type Interval struct{ From, To time.Time }

func (i Interval) contains(t time.Time) bool { return !t.Before(i.From) && !t.After(i.To) }

func (r Refusal) String() string {
	by := "admission"
	if r.ByRBAC {
		by = "RBAC"
	}
	return fmt.Sprintf("%s in %s at %s: %s refused %q: %s", r.User, r.Cluster, r.At.Format(time.RFC3339), by, r.Access.String(), r.Reason)
}

// Usage is what the audited identities did in one or more labs.
type Usage struct {
	// Suites are the test packages whose labs this usage comes from.
	Suites  []string  `json:"suites"`
	Used    []Use     `json:"used"`
	Refused []Refusal `json:"refused"`
}

// Refusals are the refusals that fail a check: every one by RBAC, and those of the
// identities own says are under test by any means (an admission policy's too); none
// that is excused.
func (u *Usage) Refusals(own func(user string) bool) []Refusal {
	var out []Refusal
	for _, r := range u.Refused {
		if r.Excused == "" && (r.ByRBAC || own(r.User)) {
			out = append(out, r)
		}
	}
	return out
}

// Merge is the union of several usages.
func Merge(us ...*Usage) *Usage {
	byAccess := map[Access]*Use{}
	out := &Usage{}
	for _, u := range us {
		out.Suites = append(out.Suites, u.Suites...)
		out.Refused = append(out.Refused, u.Refused...)
		for _, use := range u.Used {
			m := byAccess[use.Access]
			if m == nil {
				m = &Use{Access: use.Access}
				byAccess[use.Access] = m
			}
			m.Count += use.Count
			m.Clusters = append(m.Clusters, use.Clusters...)
		}
	}
	for _, m := range byAccess {
		sort.Strings(m.Clusters)
		m.Clusters = slices.Compact(m.Clusters)
		out.Used = append(out.Used, *m)
	}
	sort.Strings(out.Suites)
	out.Suites = slices.Compact(out.Suites)
	sortUses(out.Used)
	sort.SliceStable(out.Refused, func(i, j int) bool { return out.Refused[i].At.Before(out.Refused[j].At) })
	return out
}

func sortUses(uses []Use) {
	sort.Slice(uses, func(i, j int) bool {
		a, b := uses[i].Access, uses[j].Access
		if a.User != b.User {
			return a.User < b.User
		}
		return a.String() < b.String()
	})
}

// WriteFile saves u as JSON.
func (u *Usage) WriteFile(path string) error {
	data, err := json.MarshalIndent(u, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadDir merges every *.json usage file in dir.
func ReadDir(dir string) (*Usage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var us []*Usage
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		u := &Usage{}
		if err := json.Unmarshal(data, u); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		us = append(us, u)
	}
	return Merge(us...), nil
}
