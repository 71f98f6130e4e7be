package rbacaudit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

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
	// afterRemoval is how long after an RBAC object is deleted a refusal it could
	// explain is excused: a daemon on its way out of an uninstall is refused until its
	// pod has stopped (a grace period of 30 s unless its manifest says less) or its
	// ServiceAccount's deletion reaches the API server's token cache (10 s; it is then
	// unauthenticated, a 401, no refusal). A daemon refused for longer outlived its
	// uninstall, and that fails.
	afterRemoval = 40 * time.Second
	// rolesSettle is how long after a deleted RBAC object is written again a refusal
	// it could explain is excused: the authorizer reads roles from an informer.
	rolesSettle = 10 * time.Second
	// namespaceTerminating is in the NamespaceLifecycle admission's refusal of a write
	// into a namespace being deleted; terminatingGrace is how long after the first such
	// refusal of an identity in a namespace its others are excused.
	namespaceTerminating = "because it is being terminated"
	terminatingGrace     = 2 * time.Second
)

// rbacChange is a write of an RBAC object the audit log dates.
type rbacChange struct {
	// From, To: when the request was received and when it was answered.
	From, To time.Time
	Removal  bool // delete or deletecollection; otherwise create, update or patch
	// Resource is roles, rolebindings, clusterroles or clusterrolebindings; Namespace
	// "" for the cluster's; Name "" for a deletecollection.
	Resource, Namespace, Name string
}

// grantsIn reports whether c's object could grant a request in namespace ns: a Role
// or a RoleBinding only in its own namespace, a ClusterRole or a ClusterRoleBinding in
// any (a RoleBinding may bind a ClusterRole). The log holds no rules and no subjects,
// so this is as near as it can tell.
func (c rbacChange) grantsIn(ns string) bool { return c.Namespace == "" || c.Namespace == ns }

// removes reports whether removal c deleted the object write w writes again.
func (c rbacChange) removes(w rbacChange) bool {
	return c.Removal && c.Resource == w.Resource && c.Namespace == w.Namespace && (c.Name == "" || c.Name == w.Name) && !c.From.After(w.From)
}

// Read aggregates one API server's audit log (JSON lines) of cluster; notReady are the
// spans in which that API server had started and was not ready yet. Every audited
// resource request of a ServiceAccount that RBAC allowed is a use, whatever it
// answered (a get of a missing object still used the grant), and a patch or update
// answered 201 Created a use of create too; a 403 is a refusal.
// Requests made by impersonation (kubectl auth can-i --as, tests acting as a daemon)
// are not the daemon's and are left out. Writes of RBAC objects by anyone date when
// an object that could grant a refused request was removed or written again
// (rolesChanging).
func Read(r io.Reader, cluster string, notReady []Interval) (*Usage, error) {
	uses := map[Access]int{}
	var refused []Refusal
	var changes []rbacChange
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
		if ev.ObjectRef.APIGroup == rbacGroup && ev.ObjectRef.Resource != "" && code < 300 {
			switch ev.Verb {
			case "delete", "deletecollection", "create", "update", "patch":
				changes = append(changes, rbacChange{From: ev.RequestReceived, To: ev.StageTimestamp,
					Removal:  ev.Verb == "delete" || ev.Verb == "deletecollection",
					Resource: ev.ObjectRef.Resource, Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name})
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
	firstTerminating := map[[2]string]time.Time{}
	for i := range refused {
		switch at := refused[i].At; {
		case rolesChanging(refused[i], changes):
			refused[i].Excused = ExcusedRolesChanging
		case slices.ContainsFunc(notReady, func(w Interval) bool { return w.contains(at) }):
			refused[i].Excused = ExcusedAPIServerNotReady
		case racedNamespaceDeletion(refused[i], firstTerminating):
			refused[i].Excused = ExcusedNamespaceTerminating
		}
	}
	u := &Usage{Refused: refused}
	for a, n := range uses {
		u.Used = append(u.Used, Use{Access: a, Count: n, Clusters: []string{cluster}})
	}
	sortUses(u.Used)
	return u, nil
}

// ReadFile is Read of a file.
func ReadFile(path, cluster string, notReady []Interval) (*Usage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u, err := Read(f, cluster, notReady)
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

// racedNamespaceDeletion reports whether r is a write that met its namespace being
// deleted (the NamespaceLifecycle admission's refusal) within terminatingGrace of the
// first such refusal of the same identity in that namespace, noting the first in first.
// A writer cannot see a deletion that begins between its look at the namespace and its
// write, and a pass may send several writes at once; one that is refused again later
// ignored what the first refusal told it (the hub's passes, retried at once, sent
// hundreds into the MCS conformance suite's namespaces).
func racedNamespaceDeletion(r Refusal, first map[[2]string]time.Time) bool {
	if r.ByRBAC || !strings.Contains(r.Reason, namespaceTerminating) {
		return false
	}
	k := [2]string{r.User, r.Namespace}
	t, seen := first[k]
	if !seen {
		first[k] = r.At
		return true
	}
	return r.At.Sub(t) <= terminatingGrace
}

// rolesChanging reports whether an RBAC change explains refusal r: an object that could
// grant it was deleted at most afterRemoval before it, or such an object deleted at any
// time before was written again at most rolesSettle before it. Both windows are counted
// from the change itself, so a deletion nothing restores excuses only the moments after
// it, not every refusal until the cluster's next RBAC write.
func rolesChanging(r Refusal, changes []rbacChange) bool {
	for _, c := range changes {
		if !c.grantsIn(r.Namespace) || r.At.Before(c.From) {
			continue
		}
		if c.Removal && !r.At.After(c.From.Add(afterRemoval)) {
			return true
		}
		if !c.Removal && !r.At.After(c.To.Add(rolesSettle)) &&
			slices.ContainsFunc(changes, func(d rbacChange) bool { return d.removes(c) }) {
			return true
		}
	}
	return false
}
