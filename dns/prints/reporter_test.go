package prints

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

const own = "ns1.cs1"

func hubLabels(clusterSet string) map[string]string {
	return map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: clusterSet}
}

func serviceImport(name string, l map[string]string) *mcsv1.ServiceImport {
	return &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: l},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
}

func service(name string, l map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: l},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
}

func endpointSlice(name string, l map[string]string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: l},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.10"}}}}
}

// fromTheAPIServer is status.prints and status.connections computed over the objects
// as the API server lists them, the typed Peers as the hub reads them back.
func fromTheAPIServer(ctx context.Context, c client.Client) ([]straitv1.MemberPrint, straitv1.MemberConnections, error) {
	var held []printed
	var imports mcsv1.ServiceImportList
	var services corev1.ServiceList
	var slices discoveryv1.EndpointSliceList
	var peers straitv1.PeerList
	if err := errors.Join(c.List(ctx, &imports), c.List(ctx, &services), c.List(ctx, &slices),
		c.List(ctx, &peers, client.InNamespace(straitv1.SystemNamespace))); err != nil {
		return nil, straitv1.MemberConnections{}, err
	}
	for i := range imports.Items {
		held = append(held, printed{"ServiceImport", &imports.Items[i]})
	}
	for i := range services.Items {
		held = append(held, printed{"Service", &services.Items[i]})
	}
	for i := range slices.Items {
		held = append(held, printed{"EndpointSlice", &slices.Items[i]})
	}
	for i := range peers.Items {
		held = append(held, printed{"Peer", &peers.Items[i]})
	}
	return want(own, held), connections.Summarize(connections.OfPeers(peers.Items)), nil
}

func membership(ctx context.Context, c client.Client) (*straitv1.Membership, error) {
	var m straitv1.Membership
	err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, &m)
	return &m, err
}

// reported waits until the Membership's status.prints and status.connections are what
// the API server's objects make, and returns its status.
func reported(t *testing.T, c client.Client, what string) straitv1.MembershipStatus {
	t.Helper()
	var got straitv1.MembershipStatus
	require.Eventually(t, 20*time.Second, what, func() (err error) {
		got, err = asTheAPIServer(c)
		return err
	})
	return got
}

// asTheAPIServer is the Membership's status when its prints and connections are what
// the API server's objects make, else an error saying how they differ.
func asTheAPIServer(c client.Client) (straitv1.MembershipStatus, error) {
	ctx := context.Background()
	prints, conns, err := fromTheAPIServer(ctx, c)
	if err != nil {
		return straitv1.MembershipStatus{}, err
	}
	m, err := membership(ctx, c)
	if err != nil {
		return straitv1.MembershipStatus{}, err
	}
	if !Equal(m.Status.Prints, prints) {
		return m.Status, fmt.Errorf("status.prints %v, want %v", m.Status.Prints, prints)
	}
	if m.Status.Connections == nil || !reflect.DeepEqual(*m.Status.Connections, conns) {
		return m.Status, fmt.Errorf("status.connections %+v, want %+v", m.Status.Connections, conns)
	}
	return m.Status, nil
}

func entry(prints []straitv1.MemberPrint, clusterSet, kind string) (straitv1.MemberPrint, bool) {
	for _, p := range prints {
		if p.ClusterSet == clusterSet && p.Kind == kind {
			return p, true
		}
	}
	return straitv1.MemberPrint{}, false
}

// TestTheMembershipCarriesTheMembersPrint runs two reporters (two strait dns replicas)
// against a real API server: status.prints follows the hub's objects of the member
// through deletes, relabels and an update, and nothing is written while nothing
// changes.
func TestTheMembershipCarriesTheMembersPrint(t *testing.T) {
	cl := clusters.NewCluster(t)
	c := cl.Client
	ctx := context.Background()
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		// The hub's, for the member's ClusterSet and for another.
		serviceImport("web", hubLabels(own)), service("web-derived", hubLabels(own)),
		endpointSlice("web-c1", hubLabels(own)), endpointSlice("web-c2", hubLabels(own)),
		serviceImport("db", hubLabels("ns2.other")), endpointSlice("db-c2", hubLabels("ns2.other")),
		// Someone else's: no labels, the hub's ClusterSet label without the hub's mark,
		// the hub's mark without a ClusterSet.
		serviceImport("mine", nil), service("plain", nil), endpointSlice("plain-x", nil),
		service("lookalike", map[string]string{straitv1.LabelClusterSet: own}),
		endpointSlice("unset", map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub}),
	)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := range 2 {
		wg.Go(func() {
			err := Run(runCtx, cl.Config, Options{Debounce: 20 * time.Millisecond, Log: testr.New(t).WithValues("replica", i)})
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		})
	}
	// No Membership yet: nothing to write into. The hub makes it later.
	time.Sleep(300 * time.Millisecond)
	create(&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName,
		Labels: hubLabels(own)},
		Spec: straitv1.MembershipSpec{ClusterSet: "ns1/cs1", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
			ServiceCIDRs: []string{"10.101.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}}})

	first := reported(t, c, "the first report")
	got := first.Prints
	if p, _ := entry(got, own, "EndpointSlice"); p.Count != 2 {
		t.Errorf("%s EndpointSlices: %+v, want 2", own, p)
	}
	if p, ok := entry(got, "ns2.other", "Service"); !ok || p.Count != 0 || p.Sum != memberprint.FormatSum(0) {
		t.Errorf("ns2.other holds no Service: got %+v, %v; want count 0", p, ok)
	}
	if c := first.Connections; c == nil || c.Total != 0 || c.Connected != 0 {
		t.Errorf("no Peer has a state: status.connections %+v, want total and connected 0 (a report of none)", c)
	}
	m, err := membership(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, e := range m.ManagedFields {
		if e.Subresource == "status" {
			managers = append(managers, e.Manager)
		}
	}
	if fmt.Sprint(managers) != fmt.Sprint([]string{straitv1.FieldManagerPrints}) {
		t.Errorf("status written by %v, want %s alone (one entry for both replicas)", managers, straitv1.FieldManagerPrints)
	}

	// Quiet: with nothing changing, neither replica writes.
	rv := m.ResourceVersion
	time.Sleep(time.Second)
	if m, err := membership(ctx, c); err != nil || m.ResourceVersion != rv {
		t.Errorf("the Membership was written while nothing changed: resourceVersion %s, then %s (%v)", rv, m.ResourceVersion, err)
	}

	// A delete.
	for _, name := range []string{"web-c1", "web-c2"} {
		if err := c.Delete(ctx, endpointSlice(name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	got = reported(t, c, "after deleting the member's ClusterSet's EndpointSlices").Prints
	if p, ok := entry(got, own, "EndpointSlice"); !ok || p.Count != 0 {
		t.Errorf("%s holds no EndpointSlice: got %+v, %v; want count 0", own, p, ok)
	}

	// A relabel: the hub's labels taken off the derived Service, the import of the
	// other ClusterSet moved to the member's.
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web-derived"}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Labels = nil
	if err := c.Update(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	var db mcsv1.ServiceImport
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "db"}, &db); err != nil {
		t.Fatal(err)
	}
	db.Labels = hubLabels(own)
	if err := c.Update(ctx, &db); err != nil {
		t.Fatal(err)
	}
	got = reported(t, c, "after a relabel").Prints
	if p, _ := entry(got, own, "ServiceImport"); p.Count != 2 {
		t.Errorf("%s ServiceImports: %+v, want 2", own, p)
	}

	// strait dns's writer sets the clusterset IPs: a new resourceVersion, the same sum.
	// Then someone else's hand in the import: the same count, another sum.
	before, _ := entry(got, own, "ServiceImport")
	ips := &unstructured.Unstructured{Object: map[string]any{"apiVersion": mcsv1.GroupVersion.String(), "kind": "ServiceImport",
		"metadata": map[string]any{"namespace": "shop", "name": "web"}, "spec": map[string]any{"ips": []any{"10.96.0.9"}}}}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(ips), client.FieldOwner(straitv1.FieldManagerClusterSetIP), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	var web mcsv1.ServiceImport
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(web.Spec.IPs, []string{"10.96.0.9"}) {
		t.Fatalf("spec.ips %v after the clusterset-IP writer's apply", web.Spec.IPs)
	}
	// The report is written at the next debounce after a change of a print; give it
	// that long and more to show none.
	time.Sleep(time.Second)
	got = reported(t, c, "after the clusterset IPs").Prints
	if after, _ := entry(got, own, "ServiceImport"); after != before {
		t.Errorf("ServiceImports before %+v, after strait dns set the clusterset IPs %+v: want the same", before, after)
	}
	web.Annotations = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, &web, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	got = reported(t, c, "after someone's edit").Prints
	if after, _ := entry(got, own, "ServiceImport"); after.Count != before.Count || after.Sum == before.Sum {
		t.Errorf("ServiceImports before %+v, after someone's edit %+v: want the same count, another sum", before, after)
	}

	// The other ClusterSet's last object goes, and its entries with it.
	if err := c.Delete(ctx, endpointSlice("db-c2", nil)); err != nil {
		t.Fatal(err)
	}
	got = reported(t, c, "after the other ClusterSet's last object went").Prints
	if p, ok := entry(got, "ns2.other", "EndpointSlice"); ok {
		t.Errorf("a ClusterSet the member holds nothing of is still reported: %+v", p)
	}
}
