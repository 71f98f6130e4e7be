package kustomize

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/hubcmd"
	"github.com/straitnet/strait/dns/dnscmd"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/nodeagent/agent"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
	"github.com/straitnet/strait/test/require"
)

// keyDriver is a cable that loads the cluster's WireGuard key the way the wireguard
// driver does (nodeagent/cable/wireguard.LoadOrCreateKey, through the agent's own
// credentials) and records what the agent hands it; it touches no kernel.
type keyDriver struct {
	pub string
	mu  sync.Mutex
	psk []byte
	rem []cable.Remote
}

func (d *keyDriver) Name() straitv1.CableDriver { return straitv1.CableIPsec }
func (d *keyDriver) PublicKey() string          { return d.pub }
func (d *keyDriver) Cleanup(context.Context) error {
	return nil
}

func (d *keyDriver) Converge(_ context.Context, l cable.Local, r []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.psk, d.rem = l.PSK, r
	return nil
}

func (d *keyDriver) Connections(context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []cable.Connection
	for _, r := range d.rem {
		out = append(out, cable.Connection{ClusterID: r.ClusterID, Connected: true})
	}
	return out, nil
}

func (d *keyDriver) seen() (string, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return string(d.psk), len(d.rem)
}

type answeringProber struct{}

func (answeringProber) Probe(context.Context, netip.Addr, netip.Addr) (health.Result, error) {
	return health.Result{Sent: 5, Received: 5, RTT: time.Millisecond}, nil
}

// The agent, installed from kustomize/member and authenticating as its ServiceAccount,
// does its whole job as the active gateway under globalnet: it wins the gateway Lease,
// creates the WireGuard key Secret, reads the PSK, publishes its Gateway, writes Peer
// status, reads exported services' endpoints, and every pass ends without an error.
func TestAgentWorksUnderItsRole(t *testing.T) {
	c := clusters.NewCluster(t)
	install(t, c.Client, build(t, "member"))
	ctx := context.Background()
	ns := straitv1.SystemNamespace
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gw1", Labels: map[string]string{"strait.io/gateway": "true"},
		Annotations: map[string]string{agent.AnnotationGatewayIP: "203.0.113.1"}}}
	mustCreate(t, c.Client, node)
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.1"}}
	if err := c.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	const psk = "the member's copy of the ClusterSet's PSK"
	mustCreate(t, c.Client,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: straitv1.IPsecPSKSecretName, Namespace: ns},
			Data: map[string][]byte{"psk": []byte(psk)}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: ns},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/cs", ClusterID: "c1", PodCIDRs: []string{"10.10.0.0/16"},
				ServiceCIDRs:        []string{"10.11.0.0/16"},
				Globalnet:           &straitv1.MemberGlobalnet{GlobalCIDR: "242.0.1.0/24", EgressIPs: []string{"242.0.1.1"}},
				Cable:               straitv1.MemberCable{Driver: straitv1.CableIPsec, Port: 4500, PSKSecretName: straitv1.IPsecPSKSecretName},
				GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}},
		&straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: ns},
			Spec: straitv1.PeerSpec{ClusterID: "c2", CIDRs: []string{"242.0.2.0/24"},
				Endpoint: &straitv1.PeerEndpoint{Gateway: "c2-gw1", IP: "198.51.100.9", Port: 4500, Driver: straitv1.CableIPsec,
					HealthCheckIP: "242.0.2.1"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.40", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "cart-x", Namespace: "shop",
			Labels: map[string]string{discoveryv1.LabelServiceName: "cart"}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.10.0.40"}}}},
		&straitv1.GlobalIngress{ObjectMeta: metav1.ObjectMeta{Name: "shop-cart", Namespace: ns},
			Spec: straitv1.GlobalIngressSpec{ServiceName: "cart", ServiceNamespace: "shop", GlobalIP: "242.0.1.40"}})

	asAgent := impersonate(c.Config, "strait-agent")
	direct, err := client.New(asAgent, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	driver := &keyDriver{}
	reg := prometheus.NewRegistry()
	fake := kernel.NewFake(kernel.Link{Name: "eth0", Kind: "veth", MTU: 1500, Up: true,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}})
	a, err := agent.New(asAgent, agent.Config{NodeName: "gw1", Namespace: ns, Resync: 2 * time.Second,
		HealthInterval: 200 * time.Millisecond, Election: gateway.FastTiming(), Kernel: fake,
		Cables: func(ctx context.Context, _ *straitv1.Membership, _ string) (cable.Driver, error) {
			key, err := wireguard.LoadOrCreateKey(ctx, direct, ns)
			if err != nil {
				return nil, err
			}
			driver.pub = key.PublicKey().String()
			return driver, nil
		},
		Prober: answeringProber{}, MetricsAddr: "0", HealthAddr: "0", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	get := func(name string, o client.Object) error {
		return c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, o)
	}
	require.Eventually(t, 15*time.Second, "the agent holds the gateway Lease", func() error {
		l := &coordinationv1.Lease{}
		if err := get(gateway.LeaseName, l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "gw1" {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "the WireGuard key Secret made by the agent", func() error {
		s := &corev1.Secret{}
		if err := get(wireguard.KeySecretName, s); err != nil {
			return err
		}
		if len(s.Data[wireguard.PrivateKeyField]) == 0 {
			return fmt.Errorf("no key in %v", s.Data)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "the cable got the PSK and the peer", func() error {
		if got, n := driver.seen(); got != psk || n != 1 {
			return fmt.Errorf("PSK %q, %d remotes", got, n)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "its Gateway published active", func() error {
		g := &straitv1.Gateway{}
		if err := get("gw1", g); err != nil {
			return err
		}
		if g.Spec.HAState != straitv1.HAActive || g.Status.LastHeartbeat == nil || g.Spec.PublicKey != driver.pub {
			return fmt.Errorf("gateway %+v", g)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "Peer status written", func() error {
		p := &straitv1.Peer{}
		if err := get("c2", p); err != nil {
			return err
		}
		if p.Status.Gateway != "gw1" || p.Status.State == "" {
			return fmt.Errorf("peer status %+v", p.Status)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "the exported service's endpoint NATed", func() error {
		d, err := kernel.Dump(ctx, fake, route.Ownership())
		if err != nil {
			return err
		}
		if !strings.Contains(d, "242.0.1.40") || !strings.Contains(d, "10.10.0.40") {
			return fmt.Errorf("no ingress NAT for 242.0.1.40 → 10.10.0.40:\n%s", d)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "a pass without error", func() error {
		if v := gauge(t, reg, "strait_agent_last_sync_ok"); v != 1 {
			return fmt.Errorf("strait_agent_last_sync_ok %v", v)
		}
		return nil
	})
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// strait dns, installed from kustomize/member and authenticating as its ServiceAccount
// (`straitd dns` itself, with a kubeconfig that acts as strait-dns), gets ready, keeps
// its block in CoreDNS's Corefile and the Membership's status.prints: its informers,
// its Service, the coredns ConfigMap and the Membership's status are all within its
// role.
func TestDNSWorksUnderItsRole(t *testing.T) {
	c := clusters.NewCluster(t)
	install(t, c.Client, build(t, "member"))
	ctx := context.Background()
	const clusterSet = "strait-system.cs"
	hub := map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: clusterSet}
	mustCreate(t, c.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Data: map[string]string{"Corefile": ".:53 {\n    forward . /etc/resolv.conf\n}\n"}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace, Labels: hub},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/cs", ClusterID: "c1", PodCIDRs: []string{"10.10.0.0/16"},
				ServiceCIDRs: []string{"10.110.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-derived", Namespace: "default", Labels: hub},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}})

	kc := actAsKubeConfig(t, c.KubeConfig, "strait-dns")
	metrics := freeport.Addr(t)
	cmd := dnscmd.NewCommand()
	cmd.SetArgs([]string{"--kubeconfig", kc, "--listen", "127.0.0.1:0", "--udp-sockets", "1",
		"--metrics-addr", metrics, "--coredns-resync", "1s"})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, 20*time.Second, "strait dns is ready", func() error {
		r, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return err
		}
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", r.Status)
		}
		return nil
	})
	svc := &corev1.Service{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-dns"}, svc); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, 20*time.Second, "the Corefile forwards clusterset.local to strait dns", func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "coredns"}, cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["Corefile"], "clusterset.local") || !strings.Contains(cm.Data["Corefile"], svc.Spec.ClusterIP+":53") {
			return fmt.Errorf("corefile:\n%s", cm.Data["Corefile"])
		}
		return nil
	})
	require.Eventually(t, 20*time.Second, "the Membership's status.prints count the hub's Service", func() error {
		m := &straitv1.Membership{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m); err != nil {
			return err
		}
		if p, ok := memberprint.FromStatus(m.Status.Prints, clusterSet, "Service"); !ok || p.N != 1 {
			return fmt.Errorf("status.prints %v", m.Status.Prints)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("strait dns ended: %v", err)
	default:
	}
}

// actAsKubeConfig writes the administrator's kubeconfig with act-as set to the
// ServiceAccount sa (kubectl's --as), as a file for a daemon's --kubeconfig.
func actAsKubeConfig(t *testing.T, admin []byte, sa string) string {
	t.Helper()
	cfg, err := clientcmd.Load(admin)
	if err != nil {
		t.Fatal(err)
	}
	user, groups := saUser(sa)
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = user, groups
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// `straitd hub`, installed from kustomize/hub and authenticating as strait-hub in the
// hub (and as strait-hub-access in the member), does its whole job: leader election,
// the webhook certificate Secret and the CA injected into its webhook configuration,
// a ClusterSet turned Ready, and its events — the ClusterSet's (events.k8s.io) and the
// leader election's (core/v1).
func TestHubRunsUnderItsRole(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (run without -short)")
	}
	ctx := context.Background()
	env, err := clusters.Start(ctx, clusters.Options{Members: []string{"c1"},
		MemberUser: &envtest.User{Name: "system:serviceaccount:strait-system:strait-hub-access",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:strait-system", "system:authenticated"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	hubObjs := build(t, "hub")
	for _, o := range hubObjs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			// Nothing serves it here: the API server's call fails, and must not block.
			whs, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, w := range whs {
				w.(map[string]any)["failurePolicy"] = "Ignore"
			}
			_ = unstructured.SetNestedSlice(o.Object, whs, "webhooks")
		}
	}
	applyAll(t, env.Hub.Client, hubObjs)
	applyAll(t, env.Member("c1").Client, build(t, "member"))

	kc := actAsKubeConfig(t, env.Hub.KubeConfig, "strait-hub")
	metrics, probes := freeport.Addr(t), freeport.Addr(t)
	_, port, _ := net.SplitHostPort(freeport.Addr(t))
	cmd := hubcmd.NewCommand()
	cmd.SetArgs([]string{"--kubeconfig", kc, "--namespace", straitv1.SystemNamespace, "--webhook-certs", "self",
		"--webhook-port", port, "--webhook-cert-dir", t.TempDir(), "--metrics-bind-address", metrics,
		"--health-probe-bind-address", probes, "--member-probe-interval", "1s", "--log-level", "error"})
	cmd.SetOut(io.Discard)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	hub := env.Hub.Client
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: env.HubNamespace},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{Name: "c1",
			KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: env.Member("c1").KubeConfigSecret}},
			PodCIDRs:   []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.101.0.0/16"}}}}}
	mustCreate(t, hub, cs)
	require.Eventually(t, 60*time.Second, "the ClusterSet is Ready", func() error {
		cur := &straitv1.ClusterSet{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(cur.Status.Conditions, meta.ReadyCondition) {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "the leader's Lease", func() error {
		l := &coordinationv1.Lease{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-hub.strait.io"}, l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	require.Eventually(t, 10*time.Second, "the CA in the webhook configuration", func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := hub.Get(ctx, types.NamespacedName{Name: "strait-hub"}, vwc); err != nil {
			return err
		}
		if len(vwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return fmt.Errorf("no caBundle")
		}
		return hub.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-hub-webhook-cert"}, &corev1.Secret{})
	})
	require.Eventually(t, 10*time.Second, "the hub's events", func() error {
		evs := &eventsv1.EventList{}
		if err := hub.List(ctx, evs); err != nil {
			return err
		}
		kinds := map[string]bool{}
		for _, e := range evs.Items {
			kinds[e.Regarding.Kind] = true
		}
		if !kinds["ClusterSet"] || !kinds["Lease"] {
			return fmt.Errorf("events regarding %v, want a ClusterSet and the Lease", kinds)
		}
		return nil
	})
}
