package rbacaudit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Grant is one thing a role lets one identity do: a single verb on a single resource,
// in one namespace or all, of one name or any.
type Grant struct {
	User     string
	Verb     string
	Group    string
	Resource string
	// Namespace is "" when a ClusterRoleBinding grants it in every namespace and at
	// cluster scope.
	Namespace string
	// Name is "" when the rule names no resourceNames.
	Name string
	// Role is the role the grant comes from ("ClusterRole strait-agent").
	Role string
}

// String is the grant as kubectl auth can-i takes it: "get secrets NAME -n NS" or
// "list nodes -A".
func (g Grant) String() string {
	return line(g.Verb, g.Group, g.Resource, g.Namespace, g.Name, g.Namespace == "")
}

// Covers says whether RBAC allows a by this grant.
func (g Grant) Covers(a Access) bool {
	return g.User == a.User && g.Verb == a.Verb && g.Group == a.Group && g.Resource == a.Resource &&
		(g.Namespace == "" || g.Namespace == a.Namespace) && (g.Name == "" || g.Name == a.Name)
}

// ServiceAccount is the user name a ServiceAccount authenticates as.
func ServiceAccount(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Grants expands the Roles, ClusterRoles and their bindings among objs (a rendered
// kustomization; other kinds are ignored) into one grant per ServiceAccount subject,
// verb, resource, namespace and name. Rules RBAC would read more widely than written
// (wildcards, aggregated ClusterRoles, non-resource URLs) and subjects other than
// ServiceAccounts are errors: the comparison with audited requests would not hold.
func Grants(objs []*unstructured.Unstructured) ([]Grant, error) {
	roles := map[string][]rbacv1.PolicyRule{} // "Role NS/NAME" or "ClusterRole NAME"
	type binding struct {
		ns       string // "" for a ClusterRoleBinding
		roleRef  string
		subjects []rbacv1.Subject
	}
	var bindings []binding
	var errs []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			if r.AggregationRule != nil {
				errs = append(errs, fmt.Sprintf("ClusterRole %s aggregates other roles", o.GetName()))
			}
			roles[roleKey(o.GetKind(), o.GetNamespace(), o.GetName())] = r.Rules
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			refNS := ""
			if b.RoleRef.Kind == "Role" {
				refNS = o.GetNamespace()
			}
			bindings = append(bindings, binding{ns: o.GetNamespace(), roleRef: roleKey(b.RoleRef.Kind, refNS, b.RoleRef.Name), subjects: b.Subjects})
		}
	}
	var out []Grant
	for _, b := range bindings {
		rules, ok := roles[b.roleRef]
		if !ok {
			errs = append(errs, fmt.Sprintf("a binding names %s, which is not among the objects", b.roleRef))
			continue
		}
		for _, s := range b.subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				errs = append(errs, fmt.Sprintf("%s is bound to %s %s, not a ServiceAccount", b.roleRef, s.Kind, s.Name))
				continue
			}
			user := ServiceAccount(s.Namespace, s.Name)
			for _, r := range rules {
				if len(r.NonResourceURLs) > 0 {
					errs = append(errs, fmt.Sprintf("%s grants non-resource URLs %v", b.roleRef, r.NonResourceURLs))
				}
				if slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") {
					errs = append(errs, fmt.Sprintf("%s has a wildcard rule %v %v %v", b.roleRef, r.APIGroups, r.Resources, r.Verbs))
					continue
				}
				names := r.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							for _, n := range names {
								out = append(out, Grant{User: user, Verb: v, Group: g, Resource: res, Namespace: b.ns, Name: n, Role: b.roleRef})
							}
						}
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("roles the check cannot read exactly: %s", strings.Join(errs, "; "))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].String() < out[j].String()
	})
	return slices.CompactFunc(out, func(a, b Grant) bool { return a.User == b.User && a.String() == b.String() }), nil
}

func roleKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}
