package source_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/server"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

var restConfig *rest.Config

func TestMain(m *testing.M) {
	clusters.TestMain(func(c *clusters.Cluster) int {
		restConfig = c.Config
		return m.Run()
	})
}

type fixture struct {
	t        *testing.T
	c        client.Client
	udp, tcp string
}

// start runs strait dns (source and server) against the API server on loopback.
func start(t *testing.T) *fixture {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with the source's OnServed.
func startWith(t *testing.T, onServed func(time.Duration)) *fixture {
	t.Helper()
	return startDebounced(t, 10*time.Millisecond, onServed)
}

// startDebounced is startWith with the source's debounce.
func startDebounced(t *testing.T, debounce time.Duration, onServed func(time.Duration)) *fixture {
	t.Helper()
	scheme, err := source.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{Addr: "127.0.0.1:0"}, nil)
	src, err := source.New(restConfig, source.Options{Debounce: debounce,
		OnError: func(err error) { t.Errorf("source: %v", err) }, OnServed: onServed}, srv.Publish)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	addrs := make(chan [2]string, 1)
	go func() { done <- src.Run(ctx) }()
	go func() { done <- srv.Run(ctx, func(u, tc net.Addr) { addrs <- [2]string{u.String(), tc.String()} }) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}
	})
	f := &fixture{t: t, c: c}
	select {
	case a := <-addrs:
		f.udp, f.tcp = a[0], a[1]
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	return f
}

func (f *fixture) create(objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		if err := f.c.Create(context.Background(), o); err != nil {
			f.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// ask queries over network and returns the rcode and the sorted addresses or SRV lines.
func (f *fixture) ask(network, name string, qtype uint16) string {
	f.t.Helper()
	addr := f.udp
	if network == "tcp" {
		addr = f.tcp
	}
	r, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, qtype), addr)
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.SRV:
			out = append(out, fmt.Sprintf("%d %s", v.Port, v.Target))
		default:
			out = append(out, rr.String())
		}
	}
	sort.Strings(out)
	return fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], out)
}

// eventually waits until the answer over UDP and over TCP is want.
func (f *fixture) eventually(name string, qtype uint16, want string) {
	f.t.Helper()
	for _, network := range []string{"udp", "tcp"} {
		require.Eventually(f.t, 15*time.Second, network+" "+name+" "+dns.TypeToString[qtype], func() error {
			if got := f.ask(network, name, qtype); got != want {
				return fmt.Errorf("got %s, want %s", got, want)
			}
			return nil
		})
	}
}

func mcsSlice(ns, svc, cluster string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-" + cluster, Labels: map[string]string{
			mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: cluster,
			discoveryv1.LabelManagedBy: "strait-hub"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   eps,
	}
}

func endpoint(ip string, ready bool, host string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	if host != "" {
		e.Hostname = &host
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// TestAnswersFollowTheAPIServer drives one member through the changes a user makes and
// checks the answers over real UDP and TCP after each.
func TestAnswersFollowTheAPIServer(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	const web = "web.shop.svc.clusterset.local."
	f.create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/lab", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
				ServiceCIDRs: []string{"10.101.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500},
				DNS: straitv1.DNSSpec{ExtraZones: []string{"example.org"}}}},
		&straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "c2"},
			Spec: straitv1.PeerSpec{ClusterID: "c2", CIDRs: []string{"10.2.0.0/16"}}},
		&straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "c3"},
			Spec: straitv1.PeerSpec{ClusterID: "c3", CIDRs: []string{"10.3.0.0/16"}}},
		&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}},
	)
	f.eventually("dns-version.clusterset.local.", dns.TypeTXT, `NOERROR [dns-version.clusterset.local.	5	IN	TXT	"1.0.0"]`)
	f.eventually(web, dns.TypeA, "NXDOMAIN []")

	port := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](80), Protocol: ptr(corev1.ProtocolTCP)}}
	local := mcsSlice("shop", "web", "c1", port, endpoint("10.101.0.10", false, ""))
	f.create(local,
		mcsSlice("shop", "web", "c2", port, endpoint("10.102.0.10", true, "")),
		mcsSlice("shop", "web", "c3", port, endpoint("10.103.0.10", true, "")))
	// The local export is not ready: c2 and c3 take turns.
	seen := map[string]int{}
	f.eventually("c3.web.shop.svc.clusterset.local.", dns.TypeA, "NOERROR [10.103.0.10]")
	for range 4 {
		seen[f.ask("udp", web, dns.TypeA)]++
	}
	if seen["NOERROR [10.102.0.10]"] != 2 || seen["NOERROR [10.103.0.10]"] != 2 {
		t.Errorf("round robin over c2 and c3: %v", seen)
	}

	// c3's tunnel fails its health checks: only c2 answers.
	var c3 straitv1.Peer
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "c3"}, &c3); err != nil {
		t.Fatal(err)
	}
	c3.Status.State = "Error"
	c3.Status.Conditions = []metav1.Condition{{Type: straitv1.ConditionConnected, Status: metav1.ConditionFalse,
		Reason: straitv1.ReasonUnreachable, LastTransitionTime: metav1.Now()}}
	if err := f.c.Status().Update(ctx, &c3); err != nil {
		t.Fatal(err)
	}
	f.eventually("c3.web.shop.svc.clusterset.local.", dns.TypeA, "NXDOMAIN []")
	for range 3 {
		if got := f.ask("udp", web, dns.TypeA); got != "NOERROR [10.102.0.10]" {
			t.Fatalf("with c3 disconnected: %s, want c2 only", got)
		}
	}

	// The local export gets ready: it is preferred.
	local.Endpoints[0].Conditions.Ready = ptr(true)
	if err := f.c.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	f.eventually(web, dns.TypeA, "NOERROR [10.101.0.10]")
	f.eventually("web.shop.svc.example.org.", dns.TypeA, "NOERROR [10.101.0.10]")
	f.eventually("_http._tcp."+web, dns.TypeSRV, "NOERROR [80 web.shop.svc.clusterset.local.]")

	// A headless service with per-endpoint names.
	f.create(&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.Headless, Ports: []mcsv1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}},
		mcsSlice("shop", "db", "c2", []discoveryv1.EndpointPort{{Name: ptr("pg"), Port: ptr[int32](15432), Protocol: ptr(corev1.ProtocolTCP)}},
			endpoint("10.2.1.1", true, "db-0"), endpoint("10.2.1.2", true, "db-1")))
	f.eventually("db.shop.svc.clusterset.local.", dns.TypeA, "NOERROR [10.2.1.1 10.2.1.2]")
	f.eventually("db-1.c2.db.shop.svc.clusterset.local.", dns.TypeA, "NOERROR [10.2.1.2]")
	f.eventually("_pg._tcp.db.shop.svc.clusterset.local.", dns.TypeSRV,
		"NOERROR [15432 db-0.c2.db.shop.svc.clusterset.local. 15432 db-1.c2.db.shop.svc.clusterset.local.]")

	// strait dns's writer puts the clusterset IP into spec.ips: the service name
	// answers it, the cluster names still one cluster, and the bare-name SRV the port.
	var si mcsv1.ServiceImport
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &si); err != nil {
		t.Fatal(err)
	}
	si.Spec.IPs = []string{"10.96.7.7"}
	if err := f.c.Update(ctx, &si); err != nil {
		t.Fatal(err)
	}
	f.eventually(web, dns.TypeA, "NOERROR [10.96.7.7]")
	f.eventually("c2.web.shop.svc.clusterset.local.", dns.TypeA, "NOERROR [10.102.0.10]")
	f.eventually(web, dns.TypeSRV, "NOERROR [80 web.shop.svc.clusterset.local.]")

	// The ClusterSet asks for the per-cluster answer instead.
	var lf straitv1.Membership
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, &lf); err != nil {
		t.Fatal(err)
	}
	lf.Spec.DNS.ServiceAnswer = straitv1.ServiceAnswerLocalFirst
	if err := f.c.Update(ctx, &lf); err != nil {
		t.Fatal(err)
	}
	f.eventually(web, dns.TypeA, "NOERROR [10.101.0.10]")

	// The hub turns cluster names off in the Membership.
	var m straitv1.Membership
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, &m); err != nil {
		t.Fatal(err)
	}
	m.Spec.DNS.DisableClusterNames = true
	if err := f.c.Update(ctx, &m); err != nil {
		t.Fatal(err)
	}
	f.eventually("c2.web.shop.svc.clusterset.local.", dns.TypeA, "NXDOMAIN []")
	f.eventually("db-1.c2.db.shop.svc.clusterset.local.", dns.TypeA, "NOERROR [10.2.1.2]")

	// The import goes away.
	if err := f.c.Delete(ctx, &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	f.eventually(web, dns.TypeA, "NXDOMAIN []")
	f.eventually("kubernetes.default.svc.cluster.local.", dns.TypeA, "REFUSED []")
}

// TestServedChangesAreTimed: a snapshot that takes in a change says how long the change
// took from its watch event to being served: never longer than a client waited from the
// write to the answer it brought, and never shorter than the source's debounce, which it
// waits after a change. Two debounces, 10 and 400 ms, so that neither a constant nor a
// clock started at the rebuild passes both; the first snapshot, of what the initial
// lists found, is not timed.
func TestServedChangesAreTimed(t *testing.T) {
	for _, debounce := range []time.Duration{10 * time.Millisecond, 400 * time.Millisecond} {
		t.Run(debounce.String(), func(t *testing.T) { servedChangesAreTimed(t, debounce) })
	}
}

func servedChangesAreTimed(t *testing.T, debounce time.Duration) {
	var mu sync.Mutex
	var served []time.Duration
	f := startDebounced(t, debounce, func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		served = append(served, d)
	})
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/lab", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
				ServiceCIDRs: []string{"10.101.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}}},
		// strait dns answers with a cluster's endpoints only while it has a Peer for it.
		&straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "c2"},
			Spec: straitv1.PeerSpec{ClusterID: "c2", CIDRs: []string{"10.2.0.0/16"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "served"}},
	} {
		if err := f.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	f.eventually("dns-version.clusterset.local.", dns.TypeTXT, `NOERROR [dns-version.clusterset.local.	5	IN	TXT	"1.0.0"]`)
	// Quiet: nothing left of the set-up that a snapshot could still be timing.
	time.Sleep(2*debounce + 100*time.Millisecond)
	mu.Lock()
	before := len(served)
	mu.Unlock()

	svc := fmt.Sprintf("timed%d", debounce.Milliseconds())
	name := svc + ".served.svc.clusterset.local."
	port := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](80), Protocol: ptr(corev1.ProtocolTCP)}}
	wrote := time.Now()
	f.create(&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "served", Name: svc},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.Headless, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}},
		mcsSlice("served", svc, "c2", port, endpoint("10.2.0.7", true, "")))
	f.eventually(name, dns.TypeA, "NOERROR [10.2.0.7]")
	waited := time.Since(wrote)
	require.Eventually(t, time.Second, "a timed snapshot", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(served) == before {
			return fmt.Errorf("no snapshot timed since the change (%d before)", before)
		}
		longest := time.Duration(0)
		for _, d := range served[before:] {
			if d <= 0 || d > waited {
				return fmt.Errorf("a change served %s after its watch event, but the answer came %s after the write", d, waited)
			}
			longest = max(longest, d)
		}
		if longest < debounce {
			return fmt.Errorf("the changes were served %v after their watch events, none after the debounce of %s the source waited", served[before:], debounce)
		}
		return nil
	})
}
