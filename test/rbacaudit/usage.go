package rbacaudit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// WhileRolesChanged: RBAC objects had been deleted in that cluster and not yet
	// restored (an uninstall): a daemon on its way out is refused, not wrongly denied.
	WhileRolesChanged bool `json:"whileRolesChanged,omitempty"`
}

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
// made while the cluster's roles were being removed or restored.
func (u *Usage) Refusals(own func(user string) bool) []Refusal {
	var out []Refusal
	for _, r := range u.Refused {
		if !r.WhileRolesChanged && (r.ByRBAC || own(r.User)) {
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

// event is the part of an audit.k8s.io/v1 Event this package reads.
type event struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestReceived time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time         `json:"stageTimestamp"`
	Annotations     map[string]string `json:"annotations"`
}

// The annotation the authorizer puts on every audited request (its reason is empty
// for a refusal: the response's message says what was refused).
const (
	decisionAnnotation = "authorization.k8s.io/decision"
	// rbacRefusal is in the message of every refusal by RBAC (`... is forbidden: User
	// "NAME" cannot VERB resource ...`), not in an admission plugin's.
	rbacRefusal = `is forbidden: User "`
	rbacGroup   = "rbac.authorization.k8s.io"
	// rolesSettle is how long after RBAC objects are restored a refusal still counts
	// as one of the change: the authorizer reads roles from an informer.
	rolesSettle = 10 * time.Second
)

// Read aggregates one API server's audit log (JSON lines) of cluster. Every audited
// resource request of a ServiceAccount that RBAC allowed is a use, whatever it
// answered (a get of a missing object still used the grant), and a patch or update
// answered 201 Created a use of create too; a 403 is a refusal.
// Requests made by impersonation (kubectl auth can-i --as, tests acting as a daemon)
// are not the daemon's and are left out. Writes of RBAC objects by anyone mark when
// the cluster's roles were removed and restored.
func Read(r io.Reader, cluster string) (*Usage, error) {
	uses := map[Access]int{}
	var refused []Refusal
	var removed, restored []time.Time
	// A watch is logged when it starts and again when it ends: count it once.
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s audit log line %d: %w", cluster, n, err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "ResponseStarted" && ev.Stage != "Panic" || ev.ObjectRef == nil {
			continue
		}
		if seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		if ev.ObjectRef.APIGroup == rbacGroup && ev.ObjectRef.Resource != "" {
			switch ev.Verb {
			case "delete", "deletecollection":
				if code < 300 {
					removed = append(removed, ev.RequestReceived)
				}
			case "create", "update", "patch":
				if code < 300 {
					restored = append(restored, ev.StageTimestamp)
				}
			}
		}
		if !strings.HasPrefix(ev.User.Username, "system:serviceaccount:") || ev.ImpersonatedUser != nil {
			continue
		}
		a := Access{User: ev.User.Username, Verb: ev.Verb, Group: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name}
		if ev.ObjectRef.Subresource != "" {
			a.Resource += "/" + ev.ObjectRef.Subresource
		}
		decision := ev.Annotations[decisionAnnotation]
		switch {
		case decision == "forbid":
			refused = append(refused, Refusal{Access: a, Cluster: cluster, At: ev.RequestReceived, ByRBAC: true, Reason: statusMessage(ev)})
		case decision == "allow" && code == 403:
			uses[a]++
			// A patch or update that would create the object is authorized for create
			// too, inside the request: RBAC's refusal then reads like any other.
			refused = append(refused, Refusal{Access: a, Cluster: cluster, At: ev.RequestReceived,
				ByRBAC: strings.Contains(statusMessage(ev), rbacRefusal), Reason: statusMessage(ev)})
		case decision == "allow":
			uses[a]++
			// A server-side apply (patch) or an update that created the object was
			// also authorized as a create, which the log shows only by 201 Created.
			if (a.Verb == "patch" || a.Verb == "update") && code == 201 {
				c := a
				c.Verb = "create"
				uses[c]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s audit log: %w", cluster, err)
	}
	for i := range refused {
		refused[i].WhileRolesChanged = rolesChanging(refused[i].At, removed, restored)
	}
	u := &Usage{Refused: refused}
	for a, n := range uses {
		u.Used = append(u.Used, Use{Access: a, Count: n, Clusters: []string{cluster}})
	}
	sortUses(u.Used)
	return u, nil
}

// ReadFile is Read of a file.
func ReadFile(path, cluster string) (*Usage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u, err := Read(f, cluster)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reading %s", path), err)
	}
	return u, nil
}

func statusMessage(ev event) string {
	if ev.ResponseStatus == nil {
		return ""
	}
	return ev.ResponseStatus.Message
}

// rolesChanging: some RBAC object had been removed before at, and no RBAC object was
// restored between that removal and rolesSettle before at.
func rolesChanging(at time.Time, removed, restored []time.Time) bool {
	var last time.Time
	for _, t := range removed {
		if !t.After(at) && t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		return false
	}
	for _, t := range restored {
		if t.After(last) && t.Add(rolesSettle).Before(at) {
			return false
		}
	}
	return true
}
