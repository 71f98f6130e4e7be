package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// strait runs the people's binary and returns its output and exit status.
func strait(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = labtest.Run(t, 4*time.Minute, env.Strait, args...)
	t.Logf("strait %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	return stdout, stderr, code
}

// hubCluster is the ClusterSet's status of a cluster, nil when it has none.
func hubCluster(t *testing.T, name string) *straitv1.ClusterStatus {
	t.Helper()
	cs := env.ClusterSet(t)
	for i := range cs.Status.Clusters {
		if cs.Status.Clusters[i].Name == name {
			return &cs.Status.Clusters[i]
		}
	}
	return nil
}

// hubKubeconfigOf is the kubeconfig the hub holds for c3.
func hubKubeconfigOf(t *testing.T) []byte {
	t.Helper()
	s, err := env.HostClient(t, topology.HubName).CoreV1().Secrets(straitv1.SystemNamespace).Get(context.Background(), "c3-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data["value"]
}

// c3 joins the lab's clusterset as a person registers a cluster that never ran Strait:
// strait join refuses without --install, saying so; strait join --install with their
// own credentials for c3 and the hub (the hub reaching c3 at its LAN address) installs
// Strait from the lab's overlay over kustomize/member, and the entry it adds to the
// ClusterSet file and two exports from c3 go in one commit that Flux applies. Then
// every cable is Connected, pods of c1 reach c3's pods and ClusterIP with the caller
// kept and c3's clusterset names answer (strait dns put its block into c3's CoreDNS),
// and c3's pods reach c2 the same way. --rotate gives c3 a new
// token (the old one refused within the API server's 10 s token cache) with which the hub connects again. strait unjoin
// refuses while git names c3, takes it out of the file, and once that is applied and
// the hub pruned c3, deletes the hub's Secret and c3's token.
func TestJoinRegistersAThirdCluster(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	if hubCluster(t, "c3") != nil {
		t.Fatal("the lab's ClusterSet names c3 before the join")
	}
	c3, _ := env.Topo.Cluster("c3")
	hubKC := env.Lab.State().KubeconfigPath(topology.HubName)
	c3KC := env.Lab.State().KubeconfigPath("c3")
	server := "https://" + net.JoinHostPort(c3.ControlPlane.LANAddr.Addr().String(), strconv.Itoa(topology.APIPort))
	file := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(file, env.RepoClusterSet(t), 0o644); err != nil {
		t.Fatal(err)
	}

	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.HostClient(t, "c3").AppsV1().DaemonSets(straitv1.SystemNamespace).Get(ctx, "strait-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("c3's strait-agent DaemonSet before the join: %v; want none (the lab leaves an unjoined cluster without Strait)", err)
	}
	_, errOut, code := strait(t, "join", "c3", "--kubeconfig", c3KC, "--server", server, "--hub-kubeconfig", hubKC, "-f", file)
	if after, _ := os.ReadFile(file); code == 0 || !strings.Contains(errOut, "Strait is not installed there (give --install") || string(after) != string(before) {
		t.Fatalf("strait join of a cluster without Strait, no --install: exit %d, the file changed: %v; want non-zero, saying to give --install, the file as it was", code, string(after) != string(before))
	}

	start := time.Now()
	out, errOut, code := strait(t, "join", "c3", "--kubeconfig", c3KC, "--server", server, "--hub-kubeconfig", hubKC,
		"--install", env.Lab.InstallDir("c3"), "-f", file)
	t.Logf("figure: strait join --install: %.1fs", time.Since(start).Seconds())
	if code != 0 || !strings.Contains(out, "+    - name: c3\n+      kubeConfig: {secretRef: {name: c3-kubeconfig}}\n") ||
		!strings.Contains(out, "+      serviceCIDRs: [\"10.110.0.0/16\"]\n") || !strings.Contains(errOut, "Secret strait-system/c3-kubeconfig in the hub") ||
		!strings.Contains(errOut, "installing Strait in c3") {
		t.Fatalf("strait join --install: exit %d; want 0, Strait installed, the entry with c3's service CIDR added to the file, the hub's Secret named", code)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The observed pod CIDR: the smallest prefix holding the nodes' /24s, inside c3's.
	parsed, err := plan.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var joined straitv1.ClusterSpec
	for _, c := range parsed.Spec.Clusters {
		if c.Name == "c3" {
			joined = c
		}
	}
	if p, err := netip.ParsePrefix(strings.Join(joined.PodCIDRs, "")); err != nil || !c3.PodCIDR.Contains(p.Addr()) || p.Bits() < c3.PodCIDR.Bits() {
		t.Errorf("c3's entry podCIDRs %v: want one prefix inside c3's pod CIDR %s", joined.PodCIDRs, c3.PodCIDR)
	}
	for _, svc := range []string{"whereami-cs", "whereami-ss"} {
		if _, _, code := strait(t, "export", "sample/"+svc, "--clusters", "c3", "-f", file); code != 0 {
			t.Fatalf("strait export sample/%s --clusters c3: exit %d", svc, code)
		}
	}
	if data, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CommitClusterSet(t, data, "clusterset: join c3"); err != nil {
		t.Fatalf("Flux did not apply the join: %v", err)
	}
	threeConnected(t)
	t.Logf("figure: strait join --install → every cable Connected in %.1fs", time.Since(start).Seconds())

	remote := env.SamplePods(t, "c3", lab.WhereamiSS)
	if len(remote) == 0 {
		t.Fatal("c3 has no whereami pod")
	}
	for _, src := range env.SourcePods(t, "c1") {
		env.CheckAcross(t, src, "c3", remote[0])
	}
	for _, src := range env.SourcePods(t, "c3") {
		env.CheckAcross(t, src, "c2", env.SamplePods(t, "c2", lab.WhereamiSS)[0])
	}

	// --rotate: a new token; the old one is refused once the API server's cache of accepted
	// tokens (10 s) forgot it, the hub connects with the new.
	old := hubKubeconfigOf(t)
	out, _, code = strait(t, "join", "c3", "--rotate", "--kubeconfig", c3KC, "--server", server, "--hub-kubeconfig", hubKC, "-o", "json")
	var r struct {
		TokenCreated     bool
		HubSecretWritten string
		Observed         struct{ PodCIDRs []string }
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !r.TokenCreated || r.HubSecretWritten != "replaced" || !slices.Equal(r.Observed.PodCIDRs, joined.PodCIDRs) {
		t.Fatalf("strait join --rotate -o json: exit %d, %+v, %v; want 0, a new token, the hub's Secret replaced, the pod CIDR %v", code, r, err, joined.PodCIDRs)
	}
	if string(hubKubeconfigOf(t)) == string(old) {
		t.Error("the hub's kubeconfig for c3 is the same after --rotate")
	}
	took, err := require.Within(15*time.Second, func() error {
		if err := tryKubeconfig(old); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("c3 with the token before --rotate: %w; want Unauthorized", err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("the token before --rotate refused %.1fs after it", took.Seconds())
	// The hub takes a rotated Secret at its next pass; ask for one as Flux would.
	cs := env.ClusterSet(t)
	patch := []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
	if err := env.Client(t, topology.HubName).Patch(ctx, cs, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, labtest.Converge, "the hub connected to c3 with the new token", func() error { return connected(t) })

	// strait unexport: c3 stops exporting whereami-cs. c1's clusterset IP spanned c2's and
	// c3's pods; after the commit it spans c2's alone.
	slicesFrom := func(want ...string) func() error {
		return func() error {
			got, err := env.DerivedSliceClusters(t, "c1", lab.WhereamiCS)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("c1's derived slices of %s hold %v, want %v", lab.WhereamiCS, got, want)
			}
			return err
		}
	}
	require.Eventually(t, labtest.Converge, "c3 in c1's derived slices", slicesFrom("c2", "c3"))
	out, _, code = strait(t, "unexport", "sample/"+lab.WhereamiCS, "--clusters", "c3", "-f", file)
	if code != 0 || !strings.Contains(out, "-      clusters:") {
		t.Fatalf("strait unexport sample/%s --clusters c3: exit %d; want 0 and the export's clusters changed:\n%s", lab.WhereamiCS, code, out)
	}
	if data, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CommitClusterSet(t, data, "clusterset: c3 stops exporting whereami-cs"); err != nil {
		t.Fatalf("Flux did not apply the unexport: %v", err)
	}
	require.Eventually(t, labtest.Converge, "c3 out of c1's derived slices", slicesFrom("c2"))

	// unjoin: refused while git names c3.
	_, errOut, code = strait(t, "unjoin", "c3", "--hub-kubeconfig", hubKC, "--kubeconfig", c3KC)
	if code != 2 || !strings.Contains(errOut, "still names c3 in spec.clusters") {
		t.Errorf("strait unjoin before git: exit %d; want 2, naming the ClusterSet that still names c3", code)
	}
	out, _, code = strait(t, "unjoin", "c3", "-f", file)
	if code != 0 || !strings.Contains(out, "-    - name: c3\n") {
		t.Fatalf("strait unjoin -f: exit %d; want 0 and c3's entry removed", code)
	}
	if data, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CommitClusterSet(t, data, "clusterset: unjoin c3"); err != nil {
		t.Fatalf("Flux did not apply the unjoin: %v", err)
	}
	_, errOut, code = strait(t, "unjoin", "c3", "--hub-kubeconfig", hubKC, "--kubeconfig", c3KC)
	if code != 0 || !strings.Contains(errOut, "deleted Secret strait-system/c3-kubeconfig in the hub") ||
		!strings.Contains(errOut, "deleted the member's token Secret") {
		t.Fatalf("strait unjoin: exit %d; want 0, the hub's Secret and c3's token deleted", code)
	}
	if hubCluster(t, "c3") != nil {
		t.Error("the ClusterSet's status still lists c3 after unjoin")
	}
	if _, err := env.HostClient(t, "c3").CoreV1().Secrets(straitv1.SystemNamespace).Get(ctx, "strait-hub-access-token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("c3's token Secret after unjoin: %v; want it gone", err)
	}
	var ms straitv1.MembershipList
	if err := env.Client(t, "c3").List(ctx, &ms); err != nil || len(ms.Items) != 0 {
		t.Errorf("c3's Memberships after unjoin: %d, %v; want none (the hub pruned them)", len(ms.Items), err)
	}
}

// connected says whether the hub's status has c3 Connected.
func connected(t *testing.T) error {
	c := hubCluster(t, "c3")
	if c == nil {
		return errors.New("no c3 in the ClusterSet's status")
	}
	if cond := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionConnected); cond == nil || cond.Status != metav1.ConditionTrue {
		return fmt.Errorf("c3 not Connected: %+v", cond)
	}
	return nil
}

// threeConnected waits until the hub is connected to c3 and every cluster's Peers of
// the other two are Connected.
func threeConnected(t *testing.T) {
	t.Helper()
	require.Eventually(t, labtest.Converge, "the hub connected to c3", func() error { return connected(t) })
	for local, others := range map[string][]string{"c1": {"c2", "c3"}, "c2": {"c1", "c3"}, "c3": {"c1", "c2"}} {
		c, _ := env.Topo.Cluster(local)
		if err := env.Lab.WaitPeersConnected(context.Background(), *c, others, labtest.Converge); err != nil {
			t.Fatal(err)
		}
	}
}

// tryKubeconfig reads the kubernetes Service with a kubeconfig whose server is c3's LAN
// address (reached through the host's link into the lab).
func tryKubeconfig(kc []byte) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Namespaces().Get(context.Background(), straitv1.SystemNamespace, metav1.GetOptions{})
	return err
}
