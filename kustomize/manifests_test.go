package kustomize

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/webhook"
)

// build runs kustomize on one directory, as `kubectl apply -k` would.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, id(o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	sort.Strings(out)
	return out
}

func id(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// find decodes the object kind ns/name into into, failing when it is missing.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string, into runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s in %v", id(kind, ns, name), ids(objs))
}

func crdNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			out = append(out, o.GetName())
		}
	}
	return out
}

func TestHubManifests(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "hub")
	g.Expect(crdNames(objs)).To(ContainElement("clustersets.strait.io"))

	var dep appsv1.Deployment
	find(t, objs, "Deployment", "strait-system", "strait-hub", &dep)
	c := dep.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args[0]).To(Equal("hub"))
	g.Expect(c.Args).To(ContainElements("--leader-elect=true", "--webhook-certs=self"))
	g.Expect(*dep.Spec.Replicas).To(BeNumerically(">=", 2), "HA replicas")
	g.Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal("strait-hub"))
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs")))

	// The webhook reaches the pods: configuration → Service → pod labels and port.
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	find(t, objs, "ValidatingWebhookConfiguration", "", "strait-hub", &vwc)
	wh := vwc.Webhooks[0]
	g.Expect(*wh.SideEffects).To(Equal(admissionregistrationv1.SideEffectClassNone))
	g.Expect(*wh.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
	g.Expect(*wh.ClientConfig.Service.Path).To(Equal(webhook.ValidatePath))
	var svc corev1.Service
	find(t, objs, "Service", wh.ClientConfig.Service.Namespace, wh.ClientConfig.Service.Name, &svc)
	for k, v := range svc.Spec.Selector {
		g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
	}
	g.Expect(svc.Spec.Ports[0].TargetPort.StrVal).To(Equal("webhook"))
	g.Expect(c.Ports).To(ContainElement(And(HaveField("Name", "webhook"), HaveField("ContainerPort", int32(9443)))))

	// It may patch its own webhook configuration and no other.
	var cr rbacv1.ClusterRole
	find(t, objs, "ClusterRole", "", "strait-hub", &cr)
	for _, r := range cr.Rules {
		if contains(r.Resources, "validatingwebhookconfigurations") {
			g.Expect(r.ResourceNames).To(Equal([]string{vwc.Name}))
		}
		g.Expect(r.Resources).NotTo(ContainElement("secrets"), "the hub reads Secrets only in its namespace")
	}
	noWildcards(t, objs)
}

func TestMemberManifests(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "member")
	g.Expect(crdNames(objs)).To(ContainElements("serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io",
		"memberships.strait.io", "peers.strait.io", "gateways.strait.io", "globalingresses.strait.io"))
	g.Expect(ids(objs)).To(ContainElement("Namespace strait-system"))

	var ds appsv1.DaemonSet
	find(t, objs, "DaemonSet", "strait-system", "strait-agent", &ds)
	g.Expect(ds.Spec.Template.Spec.HostNetwork).To(BeTrue())
	ac := ds.Spec.Template.Spec.Containers[0]
	g.Expect(ac.Args[0]).To(Equal("agent"))
	g.Expect(ac.SecurityContext.Capabilities.Add).To(ContainElement(corev1.Capability("NET_ADMIN")))
	g.Expect(ds.Spec.Template.Spec.Tolerations).To(ContainElement(HaveField("Operator", corev1.TolerationOpExists)))
	charonSidecar(t, ds.Spec.Template.Spec)

	var dns appsv1.Deployment
	find(t, objs, "Deployment", "strait-system", "strait-dns", &dns)
	g.Expect(dns.Spec.Template.Spec.Containers[0].Args[0]).To(Equal("dns"))
	var dnsSvc corev1.Service
	find(t, objs, "Service", "strait-system", "strait-dns", &dnsSvc)
	var protos []corev1.Protocol
	for _, p := range dnsSvc.Spec.Ports {
		g.Expect(p.Port).To(Equal(int32(53)))
		protos = append(protos, p.Protocol)
	}
	g.Expect(protos).To(ConsistOf(corev1.ProtocolUDP, corev1.ProtocolTCP))

	// The hub's identity in the member: no Secret but the PSK it distributes, no verbs on
	// what it only reads.
	var cr rbacv1.ClusterRole
	find(t, objs, "ClusterRole", "", "strait-hub-access", &cr)
	var role rbacv1.Role
	find(t, objs, "Role", "strait-system", "strait-hub-access", &role)
	for _, r := range append(cr.Rules, role.Rules...) {
		if contains(r.Resources, "secrets") {
			g.Expect(r.Verbs).NotTo(ContainElement(BeElementOf("list", "watch")))
			if len(r.ResourceNames) == 0 {
				g.Expect(r.Verbs).To(Equal([]string{"create"}), "only create may go without a name")
			} else {
				g.Expect(r.ResourceNames).To(Equal([]string{plan.IPsecPSKSecretName}))
			}
		}
		// Read only: which reads the audit of the labs decides (audit_test.go).
		if contains(r.Resources, "gateways") {
			g.Expect(r.Verbs).To(ContainElements("list", "watch"))
			g.Expect(r.Verbs).To(HaveEach(BeElementOf("get", "list", "watch")))
		}
		// Services: read, and the Services derived from ClusterSetIP imports applied and
		// pruned; never updated (the hub only applies).
		if contains(r.Resources, "services") {
			g.Expect(r.Verbs).To(ContainElements("list", "watch"))
			g.Expect(r.Verbs).To(HaveEach(BeElementOf("get", "list", "watch", "create", "patch", "delete")))
		}
		if contains(r.Resources, "namespaces") {
			g.Expect(r.Verbs).To(ConsistOf("get", "create"), "namespaces are created, never deleted")
		}
	}
	noWildcards(t, objs)
}

// charonSidecar checks the ipsec cable's charon beside the agent: `straitd charon` on the
// default ipsec port, its VICI socket in a directory the agent mounts where its
// --vici-socket default points, no capability beyond NET_ADMIN and a /run of its own
// (so it needs no private mount namespace, which would take CAP_SYS_ADMIN).
func charonSidecar(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	g := NewWithT(t)
	containers := map[string]corev1.Container{}
	for _, c := range pod.Containers {
		containers[c.Name] = c
	}
	g.Expect(containers).To(HaveKey("charon"))
	charon, agent := containers["charon"], containers["agent"]
	g.Expect(charon.Args).To(HaveExactElements("charon", "--dir="+ipsec.DefaultCharonDir,
		fmt.Sprintf("--port=%d", straitv1.DefaultIPsecPort), "--private-run=false"))
	g.Expect(charon.SecurityContext.Capabilities.Add).To(ConsistOf(corev1.Capability("NET_ADMIN")))
	g.Expect(charon.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(*charon.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mountedAt := func(c corev1.Container, path string) *corev1.Volume {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path {
				v := volumes[m.Name]
				return &v
			}
		}
		return nil
	}
	shared := mountedAt(charon, ipsec.DefaultCharonDir)
	g.Expect(shared).NotTo(BeNil(), "charon's directory is not mounted")
	g.Expect(shared.EmptyDir).NotTo(BeNil(), "charon's directory is not an emptyDir")
	g.Expect(mountedAt(agent, ipsec.DefaultCharonDir)).To(Equal(shared), "the agent does not share charon's directory")
	g.Expect(agent.Args).NotTo(ContainElement(HavePrefix("--vici-socket")), "the agent must use its default socket")
	run := mountedAt(charon, "/run")
	g.Expect(run).NotTo(BeNil(), "charon has no /run of its own")
	g.Expect(run.EmptyDir).NotTo(BeNil())
	g.Expect(mountedAt(charon, "/dev/net/tun")).NotTo(BeNil(), "no /dev/net/tun for --libipsec")
}

func TestDefaultManifests(t *testing.T) {
	g := NewWithT(t)
	all := build(t, "default")
	hub, member := build(t, "hub"), build(t, "member")
	want := map[string]bool{}
	for _, s := range append(ids(hub), ids(member)...) {
		want[s] = true
	}
	got := ids(all)
	g.Expect(got).To(HaveLen(len(want)), "every object of hub and member, once")
	for _, s := range got {
		g.Expect(want).To(HaveKey(s))
	}
	// The hub writes into its own cluster with its own ServiceAccount.
	var crb rbacv1.ClusterRoleBinding
	find(t, all, "ClusterRoleBinding", "", "strait-hub-access", &crb)
	g.Expect(crb.Subjects).To(ContainElement(HaveField("Name", "strait-hub")))
}

func noWildcards(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			t.Fatal(err)
		}
		for _, rule := range r.Rules {
			s := fmt.Sprint(rule.APIGroups, rule.Resources, rule.Verbs)
			if strings.Contains(s, "*") {
				t.Errorf("%s %s has a wildcard rule: %s", o.GetKind(), o.GetName(), s)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// With the cert-manager component, the hub leaves certificates to cert-manager: its
// Deployment mounts the Certificate's Secret and the webhook configuration asks for CA
// injection.
func TestHubWithCertManager(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "testdata/hub-cert-manager")
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "strait-system", "strait-hub", &dep)
	g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--webhook-certs=external"))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--webhook-certs=self"))
	g.Expect(dep.Spec.Template.Spec.Volumes[0].Secret.SecretName).To(Equal("strait-hub-webhook-tls"))
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	find(t, objs, "ValidatingWebhookConfiguration", "", "strait-hub", &vwc)
	g.Expect(vwc.Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", "strait-system/strait-hub-webhook"))
	var cert unstructured.Unstructured
	find(t, objs, "Certificate", "strait-system", "strait-hub-webhook", &cert)
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	svc := vwc.Webhooks[0].ClientConfig.Service
	g.Expect(names).To(ContainElement(svc.Name + "." + svc.Namespace + ".svc"))
}
