package diff

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
	"github.com/straitnet/strait/test/require"
)

// env is a hub with the webhook and the hub controller running, and members c1, c2, c3,
// started once for the package. Tests run one at a time: a member holds one Membership.
var (
	env           *clusters.Env
	hubKubeconfig string // the hub's kubeconfig file
	startError    error
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	root, err := clusters.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if lacks := clusters.Lacks(root); lacks != "" {
		return require.MainSkip("%s", lacks)
	}
	ctx := context.Background()
	env, startError = clusters.Start(ctx, clusters.Options{Members: []string{"c1", "c2", "c3"}})
	if env != nil {
		defer func() { _ = env.Stop() }()
	}
	if startError == nil {
		var stop func()
		hubKubeconfig, stop, startError = hubtest.ServeHub(ctx, env)
		defer stop()
	}
	return m.Run()
}

func needEnv(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs kube-apiservers (run without -short)")
	}
	if startError != nil {
		t.Fatalf("starting the hub and members: %v", startError)
	}
}

// clusterSetYAML is a ClusterSet file as a user keeps it: members c1..cN with disjoint
// CIDRs, their kubeconfig Secrets in the hub, and the given exports of c2.
func clusterSetYAML(name string, members []string, exports ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata:\n  name: %s\n  namespace: strait-system\nspec:\n  clusters:\n", name)
	for _, m := range members {
		i := m[len(m)-1:]
		fmt.Fprintf(&b, "  - name: %s\n    kubeConfig:\n      secretRef:\n        name: %s-kubeconfig\n    podCIDRs: [10.%s.0.0/16]\n    serviceCIDRs: [10.10%s.0.0/16]\n", m, m, i, i)
	}
	if len(exports) > 0 {
		b.WriteString("  exports:\n")
		for _, e := range exports {
			ns, n, _ := strings.Cut(e, "/")
			fmt.Fprintf(&b, "  - namespace: %s\n    name: %s\n", ns, n)
		}
	}
	return b.String()
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncClusterSet applies the file to the hub as Flux's kustomize-controller would (a
// server-side apply under its own field manager) and waits until the hub reports it
// Ready; the ClusterSet is deleted, and the members cleaned, when the test ends.
func syncClusterSet(t *testing.T, text string) {
	t.Helper()
	ctx := context.Background()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	if err := env.Hub.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("kustomize-controller"), client.ForceOwnership); err != nil {
		t.Fatalf("applying the ClusterSet: %v", err)
	}
	t.Cleanup(func() { deleteClusterSet(t, u.GetName()) })
	key := client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}
	require.Eventually(t, 30*time.Second, "the ClusterSet is Ready", func() error {
		cs := &straitv1.ClusterSet{}
		if err := env.Hub.Client.Get(ctx, key, cs); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(cs.Status.Conditions, meta.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionTrue || cs.Status.ObservedGeneration != cs.Generation {
			return fmt.Errorf("conditions %+v", cs.Status.Conditions)
		}
		return nil
	})
}

func deleteClusterSet(t *testing.T, name string) {
	ctx := context.Background()
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: name}}
	if err := client.IgnoreNotFound(env.Hub.Client.Delete(ctx, cs)); err != nil {
		t.Error(err)
		return
	}
	require.Eventually(t, 30*time.Second, "the hub releases ClusterSet "+name, func() error {
		err := env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), &straitv1.ClusterSet{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("still there")
	})
}

// strait runs `strait diff` with args as a user does and returns its exit status,
// standard output and standard error.
func strait(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewCommand())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cli.Main(root, append([]string{"diff", "--kubeconfig", hubKubeconfig}, args...), &errOut)
	t.Logf("strait diff %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// serveService creates, in a member, a ClusterIP service and the EndpointSlice
// Kubernetes would make for it (envtest runs no controllers).
func serveService(t *testing.T, m *clusters.Cluster, ns, name, clusterIP, podIP string) {
	t.Helper()
	ctx := context.Background()
	if err := m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	ready, port, proto, portName := true, int32(8080), corev1.ProtocolTCP, "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	for _, o := range []client.Object{svc, slice} {
		if err := m.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = m.Client.Delete(ctx, slice)
		_ = m.Client.Delete(ctx, svc)
	})
}

// headers are the "--- " lines of a diff.
func headers(out string) []string {
	var h []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "--- ") {
			h = append(h, strings.TrimPrefix(l, "--- "))
		}
	}
	return h
}

// The file the hub already holds, with members the hub already converged (imports
// included): nothing to show, exit 0.
func TestNoChangeExitsZeroAndPrintsNothing(t *testing.T) {
	needEnv(t)
	serveService(t, env.Member("c2"), "shop", "cart", "10.0.0.30", "10.2.0.30")
	text := clusterSetYAML("same", []string{"c1", "c2"}, "shop/cart")
	syncClusterSet(t, text)
	for _, m := range []string{"c1", "c2"} {
		require.Eventually(t, 30*time.Second, m+" imports shop/cart", func() error {
			return env.Member(m).Client.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceImport{})
		})
	}
	code, out, errOut := strait(t, "-f", writeFile(t, text))
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("exit %d, output %q, errors %q; want 0 and nothing printed", code, out, errOut)
	}
}

// An export added in the file: the hub's spec gains it, and the other member gets a
// ServiceImport and an EndpointSlice pointing at c2's pod, before anything is committed.
func TestAddedExportShowsTheNewServiceImport(t *testing.T) {
	needEnv(t)
	serveService(t, env.Member("c2"), "sample", "whereami", "10.0.0.20", "10.2.0.7")
	syncClusterSet(t, clusterSetYAML("exports", []string{"c1", "c2"}))
	// c2 reached with a kubeconfig file of its own, c1 through its Secret in the hub.
	c2 := filepath.Join(t.TempDir(), "c2.kubeconfig")
	if err := os.WriteFile(c2, env.Member("c2").KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := strait(t, "-f", writeFile(t, clusterSetYAML("exports", []string{"c1", "c2"}, "sample/whereami")), "--member-kubeconfig", "c2="+c2)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (changes)", code)
	}
	for _, want := range []string{
		"--- hub/strait.io/v1alpha1/ClusterSet/strait-system/exports (live)\n+++ hub/strait.io/v1alpha1/ClusterSet/strait-system/exports (merged)\n",
		"+  exports:\n+  - clusterSetIP: AllClusters\n+    name: whereami\n+    namespace: sample\n",
		"--- c1/multicluster.x-k8s.io/v1beta1/ServiceImport/sample/whereami (live)\n+++ c1/multicluster.x-k8s.io/v1beta1/ServiceImport/sample/whereami (merged)\n@@ -0,0 +1,",
		"--- c1/v1/Namespace/sample (live)\n",
		"--- c1/discovery.k8s.io/v1/EndpointSlice/sample/" + "whereami-c2",
		"+  - 10.0.0.20\n",
		"--- c2/multicluster.x-k8s.io/v1beta1/ServiceExport/sample/whereami (live)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	for _, h := range headers(out) {
		if strings.Contains(h, "/Peer/") || strings.Contains(h, "/Membership/") {
			t.Errorf("an export changes no %s", h)
		}
	}
	// Nothing was written: the hub still holds no export, c1 no import.
	cs := &straitv1.ClusterSet{}
	if err := env.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: "strait-system", Name: "exports"}, cs); err != nil || len(cs.Spec.Exports) != 0 {
		t.Errorf("the hub's ClusterSet changed: exports %v (err %v)", cs.Spec.Exports, err)
	}
	if err := env.Member("c1").Client.Get(context.Background(), client.ObjectKey{Name: "sample"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("c1 has namespace sample after a diff (err %v)", err)
	}
}

// Overlapping pod CIDRs without globalnet: the webhook refuses the dry run; its field
// error is printed and the exit status is 2.
func TestOverlappingCIDRsAreRefusedWithTheWebhooksFieldError(t *testing.T) {
	needEnv(t)
	text := strings.Replace(clusterSetYAML("overlap", []string{"c1", "c2"}), "podCIDRs: [10.2.0.0/16]", "podCIDRs: [10.1.128.0/17]", 1)
	code, out, errOut := strait(t, "-f", writeFile(t, text))
	if code != 2 || out != "" {
		t.Fatalf("exit %d, output %q; want 2 and no diff", code, out)
	}
	for _, want := range []string{"the hub refuses ClusterSet strait-system/overlap", "spec.clusters[1].podCIDRs[0]", "10.1.128.0/17", "10.1.0.0/16", "c1 and c2 overlap"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the error lacks %q:\n%s", want, errOut)
		}
	}
}

// A cluster removed from the file: everything the hub wrote there shows as removed, and
// so do the other members' Peers for it.
func TestRemovingAClusterShowsThePrunedObjects(t *testing.T) {
	needEnv(t)
	syncClusterSet(t, clusterSetYAML("trio", []string{"c1", "c2", "c3"}))
	code, out, _ := strait(t, "-f", writeFile(t, clusterSetYAML("trio", []string{"c1", "c2"})))
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"--- c3/strait.io/v1alpha1/Membership/strait-system/membership (live)\n+++ c3/strait.io/v1alpha1/Membership/strait-system/membership (merged)\n@@ -1,",
		"--- c3/strait.io/v1alpha1/Peer/strait-system/c1 (live)\n",
		"--- c1/strait.io/v1alpha1/Peer/strait-system/c3 (live)\n",
		"--- c2/strait.io/v1alpha1/Peer/strait-system/c3 (live)\n",
		"-    name: c3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	for _, h := range headers(out) {
		if strings.HasPrefix(h, "c1/strait.io/v1alpha1/Peer/strait-system/c2") || strings.Contains(h, "/Membership/") && !strings.HasPrefix(h, "c3/") {
			t.Errorf("%s does not change", h)
		}
	}
	// A pruned object is all removal: no line of it stays.
	i := strings.Index(out, "--- c3/strait.io/v1alpha1/Membership")
	if hunk := out[i:]; strings.Contains(strings.SplitN(hunk, "\n--- ", 2)[0], "\n+kind") {
		t.Errorf("the pruned Membership is not shown as removed:\n%s", hunk)
	}
}

// Bad flags and files name what is wrong and exit with 2, kubectl diff's error status.
func TestBadInputExitsTwoNamingTheValue(t *testing.T) {
	needEnv(t)
	file := writeFile(t, clusterSetYAML("flags", []string{"c1", "c2"}))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", file, "--member-kubeconfig", "c1"}, `--member-kubeconfig "c1": want NAME=FILE`},
		{[]string{"-f", file, "--member-kubeconfig", "c9=/dev/null"}, "--member-kubeconfig c9=/dev/null: no cluster c9 in the ClusterSet"},
		{[]string{"-f", writeFile(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")}, `apiVersion "v1", kind "ConfigMap"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{nil, "-f/--file is required"},
	} {
		code, _, errOut := strait(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// A member that does not answer is an error naming it (exit 2), and the diffs of the
// clusters that answer are still printed.
func TestUnreachableMemberExitsTwoAndShowsTheOthers(t *testing.T) {
	needEnv(t)
	syncClusterSet(t, clusterSetYAML("partial", []string{"c1", "c2"}))
	c2 := env.Member("c2")
	if err := c2.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c2.StartAPIServer(); err != nil {
			t.Error(err)
		}
	})
	changed := strings.Replace(clusterSetYAML("partial", []string{"c1", "c2"}), "podCIDRs: [10.2.0.0/16]", "podCIDRs: [10.2.0.0/17]", 1)
	code, out, errOut := strait(t, "-f", writeFile(t, changed))
	if code != 2 || !strings.Contains(errOut, "cluster c2: ") {
		t.Fatalf("exit %d, %q; want 2 and an error about c2", code, errOut)
	}
	if !strings.Contains(out, "--- c1/strait.io/v1alpha1/Peer/strait-system/c2 (live)\n") || !strings.Contains(out, "+  - 10.2.0.0/17\n") {
		t.Errorf("c1's Peer for c2 does not show the new CIDR")
	}
}

// Under globalnet, with global CIDRs the hub allocated (none pinned) and a global IP per
// exported service: the allocations are read back from the members as the hub reads
// them, so the same file shows nothing; a new export shows only the new global IP.
func TestGlobalnetAllocationsAreReadBackNotRenumbered(t *testing.T) {
	needEnv(t)
	serveService(t, env.Member("c2"), "shop", "cart", "10.0.0.40", "10.2.0.40")
	serveService(t, env.Member("c2"), "shop", "db", "10.0.0.41", "10.2.0.41")
	text := clusterSetYAML("global", []string{"c1", "c2"}, "shop/cart")
	// Both clusters with c1's CIDRs: only globalnet lets them talk.
	text = strings.Replace(text, "podCIDRs: [10.2.0.0/16]\n    serviceCIDRs: [10.102.0.0/16]", "podCIDRs: [10.1.0.0/16]\n    serviceCIDRs: [10.101.0.0/16]", 1)
	text = strings.Replace(text, "  exports:", "  globalnet:\n    enabled: true\n  exports:", 1)
	syncClusterSet(t, text)
	require.Eventually(t, 30*time.Second, "c1 imports shop/cart", func() error {
		return env.Member("c1").Client.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceImport{})
	})
	if code, out, errOut := strait(t, "-f", writeFile(t, text)); code != 0 || out != "" || errOut != "" {
		t.Fatalf("the synced file: exit %d, %q %q; want 0 and nothing", code, out, errOut)
	}
	more := text + "  - namespace: shop\n    name: db\n"
	code, out, _ := strait(t, "-f", writeFile(t, more))
	if code != 1 || !strings.Contains(out, "--- c2/strait.io/v1alpha1/GlobalIngress/strait-system/db.shop (live)\n") {
		t.Fatalf("a new export: exit %d; want 1 and c2's new GlobalIngress", code)
	}
	for _, h := range headers(out) {
		if strings.Contains(h, "/Membership/") || strings.Contains(h, "/Peer/") || strings.Contains(h, "cart") {
			t.Errorf("a new export renumbers %s", h)
		}
	}
}

// With the ipsec cable every member holds a copy of the hub's pre-shared key. A rotated
// key shows as a change of each member's Secret without showing either key, as kubectl
// diff masks Secrets.
func TestRotatedIPsecKeyShowsMaskedSecrets(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	psk := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "diff-psk", Namespace: straitv1.SystemNamespace},
		Data: map[string][]byte{"psk": []byte("first-key-0123456789abcdef0123456789")}}
	if err := env.Hub.Client.Create(ctx, psk); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Hub.Client.Delete(ctx, psk) })
	text := strings.Replace(clusterSetYAML("ipsec", []string{"c1", "c2"}), "spec:\n", "spec:\n  cable:\n    driver: ipsec\n    pskSecretRef:\n      name: diff-psk\n", 1)
	syncClusterSet(t, text)
	file := writeFile(t, text)
	if code, out, _ := strait(t, "-f", file); code != 0 || out != "" {
		t.Fatalf("the synced file: exit %d, %q; want 0 and nothing", code, out)
	}

	psk.Data["psk"] = []byte("second-key-0123456789abcdef012345678")
	if err := env.Hub.Client.Update(ctx, psk); err != nil {
		t.Fatal(err)
	}
	code, out, _ := strait(t, "-f", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, m := range []string{"c1", "c2"} {
		want := "--- " + m + "/v1/Secret/strait-system/strait-ipsec-psk (live)\n"
		if !strings.Contains(out, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	if !strings.Contains(out, "-  psk: '*** (before)'\n+  psk: '*** (after)'\n") {
		t.Errorf("the key's change is not shown masked")
	}
	for _, secret := range []string{"first-key", "second-key", "Zmlyc3Qta2V5", "c2Vjb25kLWtleQ"} {
		if strings.Contains(out, secret) {
			t.Errorf("the diff shows the key (%s)", secret)
		}
	}
}

// A member that already belongs to another ClusterSet gets nothing from the hub, and the
// diff says so instead of showing its Membership taken over.
func TestMemberOfAnotherClusterSetIsAnError(t *testing.T) {
	needEnv(t)
	syncClusterSet(t, clusterSetYAML("owner", []string{"c1", "c3"}))
	code, out, errOut := strait(t, "-f", writeFile(t, clusterSetYAML("intruder", []string{"c2", "c3"})))
	if code != 2 || !strings.Contains(errOut, "cluster c3: the hub would write nothing there: the cluster is a member of ClusterSet strait-system/owner") {
		t.Fatalf("exit %d, %q; want 2 and c3's owner named", code, errOut)
	}
	if !strings.Contains(out, "--- c2/strait.io/v1alpha1/Membership/strait-system/membership (live)\n") || strings.Contains(out, "--- c3/") {
		t.Errorf("want c2's new Membership and nothing of c3")
	}
}
