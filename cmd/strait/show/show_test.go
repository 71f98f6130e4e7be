package show

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
	"github.com/straitnet/strait/test/require"
)

// env is a hub running the hub controller (in this process, as straitd hub) and members
// c1, c2 that it reaches with exactly the role kustomize/member gives it; so whatever
// show reads through it, the hub may read.
var (
	env           *clusters.Env
	hubKubeconfig string
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
	env, startError = clusters.Start(ctx, clusters.Options{Members: []string{"c1", "c2"}, MemberUser: &envtest.User{Name: clusters.HubAccessUser}})
	if env != nil {
		defer func() { _ = env.Stop() }()
	}
	for _, c := range []string{"c1", "c2"} {
		if startError == nil {
			startError = env.Member(c).GrantHubAccess(ctx, clusters.HubAccessUser)
		}
	}
	if startError == nil {
		var stop func()
		hubKubeconfig, stop, startError = hubtest.ServeHub(ctx, env)
		defer stop()
	}
	if startError == nil {
		startError = seed(ctx)
	}
	return m.Run()
}

// seed is a clusterset as it runs: the ClusterSet in the hub (c2 exports shop/cart), and in
// each member what its agents and strait dns write: Gateways (c1 two, one active; c2 one),
// the Peers' status from the active gateways (c1 → c2 up, c2 → c1 still connecting), and
// every daemon's build in the Membership.
func seed(ctx context.Context) error {
	c1, c2 := env.Member("c1"), env.Member("c2")
	if err := serveService(ctx, c2, "shop", "cart", "10.0.0.30", "10.2.0.30"); err != nil {
		return err
	}
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "basic", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.ClusterSetSpec{
			Clusters: []straitv1.ClusterSpec{
				{Name: "c1", KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: c1.KubeConfigSecret}},
					PodCIDRs: []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.101.0.0/16"}},
				{Name: "c2", KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: c2.KubeConfigSecret}},
					PodCIDRs: []string{"10.2.0.0/16"}, ServiceCIDRs: []string{"10.102.0.0/16"}},
			},
			Exports: []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}},
		}}
	if err := env.Hub.Client.Create(ctx, cs); err != nil {
		return err
	}
	gateways := map[*clusters.Cluster][]straitv1.Gateway{
		c1: {gateway("c1-gw1", straitv1.HAActive, "192.0.2.11"), gateway("c1-gw2", straitv1.HAPassive, "192.0.2.12")},
		c2: {gateway("c2-gw1", straitv1.HAActive, "192.0.2.21")},
	}
	gateways[c2][0].Spec.LocalIP = "10.2.255.1"
	for m, gws := range gateways {
		for i := range gws {
			g := &gws[i]
			if err := m.Client.Create(ctx, g); err != nil {
				return err
			}
			now := metav1.Now()
			g.Status = straitv1.GatewayStatus{LastHeartbeat: &now, Conditions: []metav1.Condition{{Type: "Ready",
				Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: now}}}
			if err := m.Client.Status().Update(ctx, g); err != nil {
				return err
			}
		}
	}
	// The hub routes each member to the other's active gateway: wait for the Peers.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range []struct {
		m            *clusters.Cluster
		peer, state  string
		latency      int64
		loss         int32
		gateway, msg string
		// inUse: c2's gateway sits behind a 1:1 NAT that also rewrites the port.
		inUse string
	}{{c1, "c2", "Connected", 420, 0, "c1-gw1", "healthy", "192.0.2.21:40123"}, {c2, "c1", "Connecting", 0, 100, "c2-gw1", "no answer to 5 health checks", ""}} {
		peer := &straitv1.Peer{}
		for {
			err := p.m.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: p.peer}, peer)
			if err == nil && peer.Spec.Endpoint != nil {
				break
			}
			if time.Now().After(deadline) {
				if err == nil {
					err = errors.New("it has no endpoint")
				}
				return fmt.Errorf("%s: no Peer %s with an endpoint from the hub: %w", p.m.Name, p.peer, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		status := metav1.ConditionTrue
		if p.state != "Connected" {
			status = metav1.ConditionFalse
		}
		hs := metav1.NewTime(time.Now().Add(-30 * time.Second))
		peer.Status = straitv1.PeerStatus{State: p.state, Gateway: p.gateway, LatencyMicros: p.latency, LossPercent: p.loss,
			LastHandshake: &hs, RxBytes: 3 << 20, TxBytes: 5 << 10, Endpoint: p.inUse, NATDetected: p.inUse != "", Initiator: "Both",
			Conditions: []metav1.Condition{{Type: straitv1.ConditionConnected, Status: status, Reason: p.state, Message: p.msg, LastTransitionTime: hs}}}
		if err := p.m.Client.Status().Update(ctx, peer); err != nil {
			return err
		}
	}
	for _, m := range []*clusters.Cluster{c1, c2} {
		for _, d := range []straitv1.DaemonStatus{
			daemonbuild.Self(straitv1.DaemonAgent, m.Name+"-gw1", "", time.Now()),
			daemonbuild.Self(straitv1.DaemonDNS, m.Name+"-gw1", "strait-dns-7c9f-"+m.Name, time.Now()),
		} {
			if err := daemonbuild.Publish(ctx, m.Client, straitv1.SystemNamespace, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func gateway(node string, ha straitv1.HAState, ip string) straitv1.Gateway {
	return straitv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: straitv1.SystemNamespace},
		Spec: straitv1.GatewaySpec{NodeName: node, HAState: ha, IP: ip, Port: 4500, Driver: straitv1.CableWireGuard,
			PublicKey: "cHVibGljLWtleS1vZi0" + node, HealthCheckIP: "10.1.255.254"}}
}

// serveService makes a Service and the EndpointSlice Kubernetes would make for it
// (envtest runs no controllers).
func serveService(ctx context.Context, m *clusters.Cluster, ns, name, clusterIP, podIP string) error {
	if err := m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	ready, port, proto, portName := true, int32(8080), corev1.ProtocolTCP, "http"
	for _, o := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns,
				Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	} {
		if err := m.Client.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
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

// strait runs strait with args and the hub's kubeconfig as a user does; it returns the
// exit status, standard output and standard error.
func strait(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewShowCommand(), NewVersionCommand())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cli.Main(root, append(args, "--kubeconfig", hubKubeconfig), &errOut)
	t.Logf("strait %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// row is the line of a table whose fields start with the given ones, or "".
func row(out string, first ...string) []string {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= len(first) && strings.Join(f[:len(first)], " ") == strings.Join(first, " ") {
			return f
		}
	}
	return nil
}

// The tunnel that is up and the one that is not, as an operator reads them, and exit 1
// for the one that is down, naming it.
func TestShowConnectionsTellsWhichTunnelIsDown(t *testing.T) {
	needEnv(t)
	code, out, errOut := strait(t, "show", "connections")
	if code != exitFindings {
		t.Errorf("exit %d, want %d (a connection is not up)", code, exitFindings)
	}
	up := row(out, "c1", "c2")
	want := []string{"c1", "c2", "c1-gw1", "c2-gw1", "192.0.2.21:4500", "wireguard", "Connected", "0.42ms", "0%"}
	if len(up) < len(want)+3 || strings.Join(up[:len(want)], " ") != strings.Join(want, " ") || up[len(up)-2] != "3.0MiB" || up[len(up)-1] != "5.0KiB" {
		t.Errorf("c1 → c2 row %q, want it to start %q and end with 3.0MiB 5.0KiB", up, want)
	}
	down := row(out, "c2", "c1")
	if len(down) < 7 || down[6] != "Connecting" || down[4] != "192.0.2.11:4500" {
		t.Errorf("c2 → c1 row %q, want Connecting towards c1's active gateway 192.0.2.11:4500", down)
	}
	if !strings.Contains(errOut, "warning: c2 → c1: Connecting: no answer to 5 health checks") {
		t.Errorf("stderr %q, want a warning naming c2 → c1 and why", errOut)
	}
}

// Behind a NAT: the endpoint the cable uses, the NAT and the initiator beside the
// advertised endpoint, and the gateway's own address beside its advertised one.
func TestShowConnectionsAndGatewaysBehindNAT(t *testing.T) {
	needEnv(t)
	_, out, _ := strait(t, "show", "connections", "-o", "json")
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range r.Connections {
		got = append(got, fmt.Sprintf("%s→%s %s in use %q nat %v initiator %s", c.Cluster, c.Peer, c.Endpoint, c.InUse, c.NATDetected, c.Initiator))
	}
	want := []string{`c1→c2 192.0.2.21:4500 in use "192.0.2.21:40123" nat true initiator Both`,
		`c2→c1 192.0.2.11:4500 in use "" nat false initiator Both`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("connections:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, out, _ = strait(t, "show", "gateways", "-o", "json", "--cluster", "c2")
	r = Report{}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Gateways) != 1 || r.Gateways[0].Endpoint != "192.0.2.21:4500" || r.Gateways[0].LocalIP != "10.2.255.1" {
		t.Errorf("c2's gateways %+v, want c2-gw1 at 192.0.2.21:4500 with its own address 10.2.255.1", r.Gateways)
	}
}

// The active gateways, by name and endpoint, the passive one, and the networks the hub
// gave each member.
func TestShowGatewaysEndpointsAndNetworks(t *testing.T) {
	needEnv(t)
	code, out, errOut := strait(t, "show", "gateways")
	if code != 0 || errOut != "" {
		t.Errorf("gateways: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	for _, want := range [][]string{{"c1", "c1-gw1", "active", "192.0.2.11:4500", "wireguard", "True"},
		{"c1", "c1-gw2", "passive"}, {"c2", "c2-gw1", "active", "192.0.2.21:4500"}} {
		if row(out, want...) == nil {
			t.Errorf("gateways: no row %q in\n%s", want, out)
		}
	}
	_, out, _ = strait(t, "show", "endpoints", "--cluster", "c2")
	if row(out, "c2", "c2-gw1", "192.0.2.21:4500", "wireguard", "10.1.255.254") == nil || row(out, "c1") != nil {
		t.Errorf("endpoints --cluster c2: want c2's active gateway alone:\n%s", out)
	}
	_, out, _ = strait(t, "show", "networks")
	if row(out, "c1", "10.1.0.0/16", "10.101.0.0/16", "-") == nil || row(out, "c2", "10.2.0.0/16", "10.102.0.0/16", "-") == nil {
		t.Errorf("networks: want each member's CIDRs:\n%s", out)
	}
}

// The export in git, in every member, with the conditions the hub wrote: ready where the
// service is (c2), not valid where it is not (c1), which is a warning naming why.
func TestShowExportsWithTheirConditions(t *testing.T) {
	needEnv(t)
	var code int
	var out, errOut string
	require.Eventually(t, 20*time.Second, "the hub's conditions on both exports", func() error {
		code, out, errOut = strait(t, "show", "exports")
		if row(out, "c2", "shop", "cart", "True", "True", "False", "-") == nil || row(out, "c1", "shop", "cart", "False", "False", "False") == nil {
			return fmt.Errorf("rows:\n%s", out)
		}
		return nil
	})
	if want := "warning: c1: export shop/cart: valid False, ready False, conflict False: Valid: service shop/cart does not exist in this cluster"; code != exitFindings || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitFindings, want)
	}
	_, out, _ = strait(t, "show", "exports", "-o", "json")
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Exports) != 2 || len(r.Findings) != 1 || r.Connections != nil {
		t.Errorf("-o json: %+v; want the two exports, one finding and no other view", r)
	}
}

// The import the hub wrote in every member for c2's export: its type, its family and
// c2 as the exporting cluster.
func TestShowImportsWithTheirFamilies(t *testing.T) {
	needEnv(t)
	var out string
	require.Eventually(t, 20*time.Second, "the hub's ServiceImports in both members", func() error {
		_, out, _ = strait(t, "show", "imports")
		for _, c := range []string{"c1", "c2"} {
			if row(out, c, "shop", "cart", "ClusterSetIP", "IPv4") == nil {
				return fmt.Errorf("no import of shop/cart in %s:\n%s", c, out)
			}
		}
		return nil
	})
	_, out, _ = strait(t, "show", "imports", "-o", "json")
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Imports) != 2 || r.Imports[0].IPFamilies[0] != "IPv4" || len(r.Imports[0].Clusters) != 1 || r.Imports[0].Clusters[0] != "c2" {
		t.Errorf("-o json: %+v; want shop/cart in c1 and c2, IPv4, exported by c2", r.Imports)
	}
}

// Every daemon's build beside this strait's: equal, exit 0; a dns of another build is
// named in a warning, exit 1.
func TestVersionShowsEveryDaemonAndWarnsOnAnother(t *testing.T) {
	needEnv(t)
	b := cli.Version()
	code, out, errOut := strait(t, "version")
	if code != 0 || errOut != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	if !strings.HasPrefix(out, "strait "+b.Version+" (revision "+b.Revision+", ") {
		t.Errorf("first line of %q: want this strait's build", out)
	}
	for _, want := range [][]string{{"hub", "hub", "-", "hubtest", b.Version}, {"c1", "agent", "c1-gw1", "-", b.Version},
		{"c1", "dns", "c1-gw1", "strait-dns-7c9f-c1", b.Version}, {"c2", "agent", "c2-gw1"}, {"c2", "dns", "c2-gw1"}} {
		if row(out, want...) == nil {
			t.Errorf("no row %q", want)
		}
	}

	ctx := context.Background()
	c2 := env.Member("c2")
	old := daemonbuild.Self(straitv1.DaemonDNS, "c2-w1", "strait-dns-old", time.Now())
	old.Build = straitv1.Build{Version: "v0.0.9", Revision: "0123456789abcdef0123456789abcdef01234567"}
	if err := daemonbuild.Publish(ctx, c2.Client, straitv1.SystemNamespace, old); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = daemonbuild.Withdraw(ctx, c2.Client, straitv1.SystemNamespace, old) }()
	code, out, errOut = strait(t, "version")
	if code != exitFindings || row(out, "c2", "dns", "c2-w1", "strait-dns-old", "v0.0.9", "0123456789ab") == nil {
		t.Errorf("exit %d; want %d and the old dns's row", code, exitFindings)
	}
	if want := "warning: c2 dns c2-w1 runs v0.0.9 (revision 0123456789abcdef0123456789abcdef01234567), this strait is " + b.Version; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	code, out, _ = strait(t, "version", "--client")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("version --client: exit %d, %q; want this strait's line alone", code, out)
	}
}

// all is every view, each under its name; -o yaml is one document a script can read.
func TestShowAllAndItsExitStatus(t *testing.T) {
	needEnv(t)
	code, out, _ := strait(t, "show", "all")
	if code != exitFindings {
		t.Errorf("exit %d, want %d (c2 → c1 is not up)", code, exitFindings)
	}
	for _, h := range []string{"CONNECTIONS", "GATEWAYS", "ENDPOINTS", "NETWORKS", "EXPORTS", "IMPORTS", "VERSIONS"} {
		if !strings.Contains(out, "\n"+h+"\n") && !strings.HasPrefix(out, h+"\n") {
			t.Errorf("no section %s", h)
		}
	}
	code, _, errOut := strait(t, "show", "all", "--cluster", "c9")
	if code != exitError || !strings.Contains(errOut, "--cluster c9: no cluster c9 in ClusterSet strait-system/basic (it has c1, c2)") {
		t.Errorf("--cluster c9: exit %d, %q; want %d naming the flag, the value and the clusters", code, errOut, exitError)
	}
	code, _, errOut = strait(t, "show", "all", "-o", "xml")
	if code != exitError || !strings.Contains(errOut, `-o/--output "xml": want json or yaml`) {
		t.Errorf("-o xml: exit %d, %q", code, errOut)
	}
}

// A member the hub cannot reach: its error, exit 2, and the others still shown.
func TestUnreadableMemberIsAnErrorAndTheOthersAreShown(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	c2 := env.Member("c2")
	sec := &corev1.Secret{}
	key := types.NamespacedName{Namespace: env.HubNamespace, Name: c2.KubeConfigSecret}
	if err := env.Hub.Client.Get(ctx, key, sec); err != nil {
		t.Fatal(err)
	}
	good := sec.DeepCopy()
	sec.Data = map[string][]byte{"other": []byte("x")}
	if err := env.Hub.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cur := &corev1.Secret{}
		if err := env.Hub.Client.Get(ctx, key, cur); err == nil {
			cur.Data = good.Data
			_ = env.Hub.Client.Update(ctx, cur)
		}
	}()
	code, out, errOut := strait(t, "show", "gateways")
	if code != exitError || !strings.Contains(errOut, "error: cluster c2: kubeconfig Secret strait-system/c2-kubeconfig has no key \"value\"") {
		t.Errorf("exit %d, stderr %q; want %d and c2's error", code, errOut, exitError)
	}
	if row(out, "c1", "c1-gw1", "active") == nil {
		t.Errorf("c1's gateways not shown:\n%s", out)
	}
}

// Completion offers the ClusterSet's clusters for --cluster, read from the hub.
func TestClusterNamesComplete(t *testing.T) {
	needEnv(t)
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewShowCommand(), NewVersionCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "show", "connections", "--kubeconfig", hubKubeconfig, "--cluster", ""})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out.String()); len(got) < 3 || got[0] != "c1" || got[1] != "c2" || got[2] != ":4" {
		t.Errorf("completion of --cluster: %q, want c1, c2 and no file completion (:4)", out.String())
	}
}

// TestLossIsUnknownWithoutAHealthCheckRound: no latency and no loss is no round measured
// (an IPv6-only pair without a health-check address): "-", not "0%".
func TestLossIsUnknownWithoutAHealthCheckRound(t *testing.T) {
	for _, tc := range []struct {
		latency int64
		loss    int32
		want    string
	}{{420, 0, "0%"}, {0, 100, "100%"}, {900, 40, "40%"}, {0, 0, "-"}} {
		if got := loss(tc.latency, tc.loss); got != tc.want {
			t.Errorf("loss(%d µs, %d %%) = %q, want %q", tc.latency, tc.loss, got, tc.want)
		}
	}
}
