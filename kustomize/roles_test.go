package kustomize

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
)

// The grants of each ServiceAccount, one line per verb, as `kubectl auth can-i` reads
// them: "VERB RESOURCE[.GROUP][/SUBRESOURCE] [NAME]". Every line is what the daemon's code
// calls (see the rule comments in the manifests); a line added to a role and not here
// fails TestRolesGrantExactlyWhatTheCodeUses.
var (
	agentCluster = []string{
		"list nodes", "watch nodes",
		"list services", "watch services",
		"list endpointslices.discovery.k8s.io", "watch endpointslices.discovery.k8s.io",
	}
	agentSystem = []string{
		"list memberships.strait.io", "watch memberships.strait.io",
		"list peers.strait.io", "watch peers.strait.io",
		"list globalingresses.strait.io", "watch globalingresses.strait.io",
		"patch peers.strait.io/status",
		"get gateways.strait.io", "list gateways.strait.io", "watch gateways.strait.io", "create gateways.strait.io",
		"update gateways.strait.io", "patch gateways.strait.io", "delete gateways.strait.io",
		"update gateways.strait.io/status",
		"get leases.coordination.k8s.io strait-gateway", "list leases.coordination.k8s.io strait-gateway",
		"watch leases.coordination.k8s.io strait-gateway", "update leases.coordination.k8s.io strait-gateway",
		"create leases.coordination.k8s.io",
		"list secrets strait-ipsec-psk", "watch secrets strait-ipsec-psk",
		"get secrets strait-wireguard-key",
		"create secrets",
		"get daemonsets.apps strait-agent",
	}
	dnsCluster = []string{
		"list serviceimports.multicluster.x-k8s.io", "watch serviceimports.multicluster.x-k8s.io",
		"list endpointslices.discovery.k8s.io", "watch endpointslices.discovery.k8s.io",
	}
	dnsSystem = []string{
		"list memberships.strait.io", "watch memberships.strait.io",
		"list peers.strait.io", "watch peers.strait.io",
		"get services strait-dns",
	}
	dnsKubeSystem = []string{"get configmaps coredns", "update configmaps coredns"}
	hubCluster    = []string{
		"list clustersets.strait.io", "watch clustersets.strait.io", "patch clustersets.strait.io",
		"patch clustersets.strait.io/status",
		"create events.events.k8s.io", "patch events.events.k8s.io",
		"get validatingwebhookconfigurations.admissionregistration.k8s.io strait-hub",
		"patch validatingwebhookconfigurations.admissionregistration.k8s.io strait-hub",
	}
	hubSystem = []string{
		"get secrets", "create secrets", "update secrets strait-hub-webhook-cert",
		"create leases.coordination.k8s.io",
		"get leases.coordination.k8s.io strait-hub.strait.io", "update leases.coordination.k8s.io strait-hub.strait.io",
		"create events", "patch events",
	}
	hubAccessCluster = []string{
		"get services", "list services", "watch services",
		"get namespaces", "create namespaces",
		"get endpointslices.discovery.k8s.io", "list endpointslices.discovery.k8s.io", "watch endpointslices.discovery.k8s.io",
		"create endpointslices.discovery.k8s.io", "patch endpointslices.discovery.k8s.io", "delete endpointslices.discovery.k8s.io",
		"get serviceexports.multicluster.x-k8s.io", "list serviceexports.multicluster.x-k8s.io", "watch serviceexports.multicluster.x-k8s.io",
		"create serviceexports.multicluster.x-k8s.io", "patch serviceexports.multicluster.x-k8s.io", "delete serviceexports.multicluster.x-k8s.io",
		"get serviceimports.multicluster.x-k8s.io", "list serviceimports.multicluster.x-k8s.io", "watch serviceimports.multicluster.x-k8s.io",
		"create serviceimports.multicluster.x-k8s.io", "patch serviceimports.multicluster.x-k8s.io", "delete serviceimports.multicluster.x-k8s.io",
		"patch serviceexports.multicluster.x-k8s.io/status", "patch serviceimports.multicluster.x-k8s.io/status",
	}
	hubAccessSystem = []string{
		"get memberships.strait.io", "list memberships.strait.io", "watch memberships.strait.io",
		"create memberships.strait.io", "patch memberships.strait.io", "delete memberships.strait.io",
		"get peers.strait.io", "list peers.strait.io", "watch peers.strait.io",
		"create peers.strait.io", "patch peers.strait.io", "delete peers.strait.io",
		"get globalingresses.strait.io", "list globalingresses.strait.io", "watch globalingresses.strait.io",
		"create globalingresses.strait.io", "patch globalingresses.strait.io", "delete globalingresses.strait.io",
		"get gateways.strait.io", "list gateways.strait.io", "watch gateways.strait.io",
		"get secrets strait-ipsec-psk", "patch secrets strait-ipsec-psk", "delete secrets strait-ipsec-psk",
		"create secrets",
	}
)

// What must stay impossible, each a request a reviewer would try. "-n NS" picks the
// namespace (default strait-system), "-A" all namespaces.
var (
	agentDenied = []string{
		"get secrets strait-hub-access-token", "list secrets strait-hub-access-token", "watch secrets strait-hub-access-token",
		"list secrets", "watch secrets", "get secrets strait-ipsec-psk", "update secrets strait-ipsec-psk",
		"patch secrets strait-ipsec-psk", "update secrets strait-wireguard-key", "delete secrets strait-wireguard-key",
		"list secrets -A", "get secrets strait-wireguard-key -n default",
		"get leases.coordination.k8s.io strait-hub.strait.io", "update leases.coordination.k8s.io strait-hub.strait.io",
		"list leases.coordination.k8s.io", "watch leases.coordination.k8s.io", "delete leases.coordination.k8s.io strait-gateway",
		"update leases.coordination.k8s.io strait-gateway -n kube-system",
		"update memberships.strait.io", "patch peers.strait.io", "create peers.strait.io",
		"update nodes", "patch nodes", "list pods -A", "list configmaps",
		"create events", "create events.events.k8s.io",
	}
	dnsDenied = []string{
		"get secrets", "list secrets", "get secrets strait-hub-access-token", "list secrets -A",
		"get configmaps", "update configmaps kube-proxy -n kube-system", "list configmaps -n kube-system",
		"get services", "list services -A", "update services strait-dns",
		"update memberships.strait.io", "patch peers.strait.io/status", "create serviceimports.multicluster.x-k8s.io",
		"list leases.coordination.k8s.io",
	}
	hubDenied = []string{
		"list secrets", "watch secrets", "list secrets -A", "get secrets -n kube-system",
		"update secrets strait-hub-access-token", "delete secrets strait-hub-webhook-cert",
		"update validatingwebhookconfigurations.admissionregistration.k8s.io other",
		"update leases.coordination.k8s.io strait-gateway", "delete clustersets.strait.io", "create clustersets.strait.io",
	}
	hubAccessDenied = []string{
		"get secrets strait-hub-access-token", "get secrets strait-wireguard-key", "list secrets", "watch secrets",
		"list secrets strait-ipsec-psk", "update secrets strait-ipsec-psk", "list secrets -A",
		"delete namespaces", "update services", "create gateways.strait.io", "patch gateways.strait.io",
		"list leases.coordination.k8s.io", "update leases.coordination.k8s.io strait-gateway",
		"update configmaps coredns -n kube-system",
	}
)

type identity struct {
	sa string
	// grants by namespace ("" for a namespace of nobody's, where only cluster-wide
	// rules apply).
	grants map[string][]string
	denied []string
}

func agentIdentity() identity {
	return identity{sa: "strait-agent", denied: agentDenied, grants: map[string][]string{
		straitv1.SystemNamespace: join(agentCluster, agentSystem), "kube-system": agentCluster, "": agentCluster}}
}

func dnsIdentity() identity {
	return identity{sa: "strait-dns", denied: dnsDenied, grants: map[string][]string{
		straitv1.SystemNamespace: join(dnsCluster, dnsSystem), "kube-system": join(dnsCluster, dnsKubeSystem), "": dnsCluster}}
}

func hubAccessIdentity() identity {
	return identity{sa: "strait-hub-access", denied: hubAccessDenied, grants: map[string][]string{
		straitv1.SystemNamespace: join(hubAccessCluster, hubAccessSystem), "kube-system": hubAccessCluster, "": hubAccessCluster}}
}

// hubIdentity is the hub's own ServiceAccount; in a hub that is also a member (default)
// it holds the member access roles too.
func hubIdentity(alsoMember bool) identity {
	id := identity{sa: "strait-hub", denied: hubDenied, grants: map[string][]string{
		straitv1.SystemNamespace: join(hubCluster, hubSystem), "kube-system": hubCluster, "": hubCluster}}
	if alsoMember {
		for ns, g := range hubAccessIdentity().grants {
			id.grants[ns] = join(id.grants[ns], g)
		}
	}
	return id
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// TestRolesGrantExactlyWhatTheCodeUses installs each overlay as a user does and asks the
// API server, for every ServiceAccount: may it do each thing its code does
// (SubjectAccessReview), is each forbidden thing refused, and is there nothing more
// (SelfSubjectRulesReview as that ServiceAccount: its rules in strait-system, kube-system
// and any other namespace must be exactly the grants above). Widening a role fails it.
func TestRolesGrantExactlyWhatTheCodeUses(t *testing.T) {
	for _, tc := range []struct {
		overlay    string
		identities []identity
	}{
		{"member", []identity{agentIdentity(), dnsIdentity(), hubAccessIdentity()}},
		{"hub", []identity{hubIdentity(false)}},
		{"default", []identity{agentIdentity(), dnsIdentity(), hubAccessIdentity(), hubIdentity(true)}},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			c := clusters.NewCluster(t)
			install(t, c.Client, build(t, tc.overlay))
			kube := kubernetes.NewForConfigOrDie(c.Config)
			for _, id := range tc.identities {
				t.Run(id.sa, func(t *testing.T) {
					for ns, grants := range id.grants {
						for _, g := range grants {
							if ok, why := allowed(t, kube, id.sa, parseAccess(t, g, ns)); !ok {
								t.Errorf("%s cannot %q in %q, which its code does: %s", id.sa, g, ns, why)
							}
						}
					}
					for _, d := range id.denied {
						if ok, _ := allowed(t, kube, id.sa, parseAccess(t, d, straitv1.SystemNamespace)); ok {
							t.Errorf("%s may %q: that must be forbidden", id.sa, d)
						}
					}
					for ns, grants := range id.grants {
						got := minus(effectiveRules(t, c.Config, id.sa, nsOrOther(ns)), effectiveRules(t, c.Config, "nobody", nsOrOther(ns)))
						want := normalize(grants)
						if !slices.Equal(got, want) {
							t.Errorf("%s in namespace %s:\n  granted beyond the code: %v\n  missing: %v",
								id.sa, nsOrOther(ns), minus(got, want), minus(want, got))
						}
					}
				})
			}
		})
	}
}

// install server-side applies an overlay's objects; the webhook configuration is only
// dry-run (nothing serves it here).
func install(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			applyAll(t, c, []*unstructured.Unstructured{o}, client.DryRunAll)
			continue
		}
		rest = append(rest, o)
	}
	applyAll(t, c, rest)
}

func nsOrOther(ns string) string {
	if ns == "" {
		return "shop"
	}
	return ns
}

func saUser(sa string) (string, []string) {
	return "system:serviceaccount:" + straitv1.SystemNamespace + ":" + sa,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + straitv1.SystemNamespace, "system:authenticated"}
}

// parseAccess reads "VERB RESOURCE[.GROUP][/SUB] [NAME] [-n NS|-A]".
func parseAccess(t *testing.T, s, ns string) authorizationv1.ResourceAttributes {
	t.Helper()
	f := strings.Fields(s)
	if len(f) < 2 {
		t.Fatalf("access %q: want VERB RESOURCE [NAME] [-n NS|-A]", s)
	}
	a := authorizationv1.ResourceAttributes{Verb: f[0], Namespace: nsOrOther(ns)}
	res, sub, _ := strings.Cut(f[1], "/")
	a.Resource, a.Group, _ = strings.Cut(res, ".")
	a.Subresource = sub
	for i := 2; i < len(f); i++ {
		switch f[i] {
		case "-A":
			a.Namespace = ""
		case "-n":
			i++
			a.Namespace = f[i]
		default:
			a.Name = f[i]
		}
	}
	return a
}

func allowed(t *testing.T, kube kubernetes.Interface, sa string, a authorizationv1.ResourceAttributes) (bool, string) {
	t.Helper()
	user, groups := saUser(sa)
	r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %+v: %v", a, err)
	}
	return r.Status.Allowed, r.Status.Reason
}

// impersonate is cfg acting as the ServiceAccount sa.
func impersonate(cfg *rest.Config, sa string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate.UserName, c.Impersonate.Groups = saUser(sa)
	return c
}

// effectiveRules is what the ServiceAccount may do in ns, one normalized line per verb,
// resource and name. The ServiceAccount "nobody" has no binding: its rules are what every
// authenticated user has, which the caller subtracts.
func effectiveRules(t *testing.T, cfg *rest.Config, sa, ns string) []string {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(impersonate(cfg, sa))
	r, err := kube.AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectRulesReview as %s: %v", sa, err)
	}
	if r.Status.Incomplete {
		t.Fatalf("SelfSubjectRulesReview as %s is incomplete: %s", sa, r.Status.EvaluationError)
	}
	var out []string
	for _, rule := range r.Status.ResourceRules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					names := rule.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						out = append(out, line(v, res, g, n))
					}
				}
			}
		}
	}
	return normalize(out)
}

func line(verb, resource, group, name string) string {
	s := verb + " " + resource
	if group != "" {
		res, sub, _ := strings.Cut(resource, "/")
		s = verb + " " + res + "." + group
		if sub != "" {
			s += "/" + sub
		}
	}
	if name != "" {
		s += " " + name
	}
	return s
}

// normalize sorts and dedups lines (two bindings may grant the same).
func normalize(lines []string) []string {
	out := slices.Clone(lines)
	sort.Strings(out)
	return slices.Compact(out)
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// The API server, not only the reviews, refuses what the roles do not name: a Secret or
// Lease list or watch without the field selector metadata.name is Forbidden, the same
// request with it is allowed (this is what client-go sends for the agent's field-selected
// informers), and the admission policy refuses Secrets the agent or the hub's identity
// create under another name or as a ServiceAccount token.
func TestRequestsAsTheAgent(t *testing.T) {
	c := clusters.NewCluster(t)
	install(t, c.Client, build(t, "member"))
	ctx := context.Background()
	agent := kubernetes.NewForConfigOrDie(impersonate(c.Config, "strait-agent"))
	g := NewWithT(t)
	secrets := agent.CoreV1().Secrets(straitv1.SystemNamespace)
	byName := func(n string) metav1.ListOptions { return metav1.ListOptions{FieldSelector: "metadata.name=" + n} }

	_, err := secrets.List(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list secrets: %v", err)
	_, err = secrets.List(ctx, byName(straitv1.IPsecPSKSecretName))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = secrets.List(ctx, byName("strait-hub-access-token"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list the token by name: %v", err)
	_, err = secrets.Get(ctx, "strait-hub-access-token", metav1.GetOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "get the token: %v", err)
	w, err := secrets.Watch(ctx, byName(straitv1.IPsecPSKSecretName))
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()
	_, err = secrets.Watch(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "watch secrets: %v", err)

	// After a conflict on its informer's copy the agent reads its Gateway from the API
	// server itself (updateLive): not found here, but not forbidden.
	gw := &unstructured.Unstructured{}
	gw.SetGroupVersionKind(straitv1.GroupVersion.WithKind("Gateway"))
	agentClient, err := client.New(impersonate(c.Config, "strait-agent"), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	err = agentClient.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "c1-gw-1"}, gw)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get a gateway from the API server: %v", err)

	leases := agent.CoordinationV1().Leases(straitv1.SystemNamespace)
	_, err = leases.List(ctx, byName("strait-gateway"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = leases.List(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list leases: %v", err)

	// Create is not limited by name in RBAC; the admission policy limits it. It takes
	// effect shortly after it is installed: wait for it with Secrets of other names.
	probe := 0
	g.Eventually(func() error {
		probe++
		_, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", probe)}}, metav1.CreateOptions{})
		return err
	}, 10*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("may create only the Secret strait-wireguard-key")))
	// The escalation the policy is for: the key's name, but a token of the hub's identity.
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "strait-wireguard-key",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "strait-hub-access"}},
		Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("may create only the Secret strait-wireguard-key")))
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "strait-wireguard-key"},
		Data: map[string][]byte{"privateKey": []byte("x")}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the wireguard key Secret")

	hubAccess := kubernetes.NewForConfigOrDie(impersonate(c.Config, "strait-hub-access")).CoreV1().Secrets(straitv1.SystemNamespace)
	_, err = hubAccess.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "strait-agent-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "strait-agent"}},
		Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("may create only the Secret strait-ipsec-psk")))
	// Anyone else (here: an administrator) is not touched by the policy.
	g.Expect(c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "admins", Namespace: straitv1.SystemNamespace}})).To(Succeed())
}
