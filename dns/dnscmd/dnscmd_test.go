package dnscmd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
)

// startAPIServer starts a kube-apiserver for one test (test/clusters) and returns a
// client and the path of an administrator's kubeconfig.
func startAPIServer(t *testing.T) (client.Client, string) {
	t.Helper()
	cl := clusters.NewCluster(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, cl.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme, err := source.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cl.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubeconfig
}

// TestDNSCommand runs `straitd dns` as a user would against a member: it answers from the
// imports, writes its block into the Corefile, and --cleanup gives the Corefile back.
func TestDNSCommand(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	const corefileText = ".:53 {\n    errors\n    forward . /etc/resolv.conf\n    reload\n}\n"
	ready := true
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}, Data: map[string]string{"Corefile": corefileText}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "strait-dns"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}},
		&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-c1",
			Labels: map[string]string{mcsv1.LabelServiceName: "web", mcsv1.LabelSourceCluster: "c1"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.101.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "strait-dns"}, &svc); err != nil {
		t.Fatal(err)
	}

	// strait dns binds UDP and TCP with the same port number.
	addr := freeport.Addr(t)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		cmd := NewCommand()
		cmd.SetArgs([]string{"--listen", addr, "--kubeconfig", kubeconfig, "--metrics-addr", "",
			"--cluster-id", "c1", "--zones", "example.org", "--ttl", "9", "--coredns-resync", "1s"})
		done <- cmd.ExecuteContext(runCtx)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("strait dns: %v", err)
			}
		}
	}
	t.Cleanup(stop)

	var r *dns.Msg
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("strait dns exited before answering: %v", err)
		default:
		}
		r, _, err = (&dns.Client{Timeout: time.Second}).Exchange(new(dns.Msg).SetQuestion("web.shop.svc.example.org.", dns.TypeA), addr)
		if err == nil && r.Rcode == dns.RcodeSuccess || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.101.0.10" || r.Answer[0].Header().Ttl != 9 {
		t.Fatalf("web.shop.svc.example.org. A: %v %v; want 10.101.0.10 with TTL 9", r, err)
	}
	// Without GOGC in the environment, strait dns runs with its own.
	if gogc := debug.SetGCPercent(100); gogc != DefaultGCPercent && os.Getenv("GOGC") == "" {
		t.Errorf("GOGC %d while serving, want %d", gogc, DefaultGCPercent)
	}

	want := "clusterset.local:53 example.org:53 {\n    errors\n    forward . " + net.JoinHostPort(svc.Spec.ClusterIP, "53") + "\n}\n"
	var got string
	for deadline = time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm); err != nil {
			t.Fatal(err)
		}
		if got = cm.Data["Corefile"]; strings.Contains(got, want) {
			break
		}
	}
	if !strings.Contains(got, want) || !strings.HasSuffix(got, corefileText) {
		t.Fatalf("Corefile:\n%s\nwant our block forwarding to the Service IP:\n%s\nand the rest as it was", got, want)
	}
	stop()

	cleanup := NewCommand()
	cleanup.SetArgs([]string{"--cleanup", "--kubeconfig", kubeconfig})
	if err := cleanup.ExecuteContext(ctx); err != nil {
		t.Fatalf("straitd dns --cleanup: %v", err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] != corefileText {
		t.Fatalf("Corefile after --cleanup:\n%q\nwant the original\n%q", cm.Data["Corefile"], corefileText)
	}
}

func TestDNSCommandRejectsBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--coredns-configmap", "coredns"}, "--coredns-configmap"},
		{[]string{"--service", "strait-dns"}, "--service"},
		{[]string{"--ttl", "-1"}, "--ttl"},
		{[]string{"--bogus"}, "unknown flag"},
	} {
		cmd := NewCommand()
		cmd.SetArgs(append(tt.args, "--kubeconfig", "/nonexistent"))
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("straitd dns %s: error %v, want one naming %s", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}
