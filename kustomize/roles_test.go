package kustomize

import (
	"context"
	"fmt"
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
		"patch memberships.strait.io", "update memberships.strait.io/status", "patch memberships.strait.io/status other",
		"update nodes", "patch nodes", "list pods -A", "list configmaps",
		"create events", "create events.events.k8s.io",
	}
	dnsDenied = []string{
		"get secrets", "list secrets", "get secrets strait-hub-access-token", "list secrets -A",
		"get configmaps", "update configmaps kube-proxy -n kube-system", "list configmaps -n kube-system",
		"get services", "list services -A", "update services strait-dns",
		"update memberships.strait.io", "patch peers.strait.io/status", "create serviceimports.multicluster.x-k8s.io",
		"list leases.coordination.k8s.io", "patch memberships.strait.io", "update memberships.strait.io/status",
		"patch memberships.strait.io/status other",
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
		// The daemons' builds in the Membership's status are theirs: strait version reads
		// them, the hub's role does not grow for it.
		"patch memberships.strait.io/status",
	}
)

// TestRolesRefuseWhatNoDaemonMayDo installs each overlay as a user does and asks the API
// server (SubjectAccessReview) whether each request a reviewer would try is refused.
// What the roles grant is held to what the daemons did by TestRolesGrantOnlyWhatTheLabsUsed.
func TestRolesRefuseWhatNoDaemonMayDo(t *testing.T) {
	denied := map[string][]string{"strait-agent": agentDenied, "strait-dns": dnsDenied,
		"strait-hub": hubDenied, "strait-hub-access": hubAccessDenied}
	for _, tc := range []struct {
		overlay string
		sas     []string
	}{
		{"member", []string{"strait-agent", "strait-dns", "strait-hub-access"}},
		{"hub", []string{"strait-hub"}},
		{"default", []string{"strait-agent", "strait-dns", "strait-hub-access", "strait-hub"}},
	} {
		t.Run(tc.overlay, func(t *testing.T) {
			c := clusters.NewCluster(t)
			install(t, c.Client, build(t, tc.overlay))
			kube := kubernetes.NewForConfigOrDie(c.Config)
			for _, sa := range tc.sas {
				for _, d := range denied[sa] {
					if ok, _ := allowed(t, kube, sa, parseAccess(t, d, straitv1.SystemNamespace)); ok {
						t.Errorf("%s may %q: that must be forbidden", sa, d)
					}
				}
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
	a := authorizationv1.ResourceAttributes{Verb: f[0], Namespace: ns}
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
