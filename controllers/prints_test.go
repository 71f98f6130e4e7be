package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
)

// TestMemberPrintsEqualAList: the prints a member connection's informers keep from
// their events (what the resync's check compares with the hub's record) equal those a
// list from the API server gives, after the informers' first list, creates, updates, a
// label stripped, deletes, and a relist:
// the connection's watches are refused with 410 Expired while objects are deleted,
// changed and made, so that the informers learn of them only from their next list.
func TestMemberPrintsEqualAList(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	admin := f.env.Member("c3").Client
	cs := types.NamespacedName{Namespace: "prints", Name: "test"}
	key := members.Key{ClusterSet: cs, Cluster: "c3"}
	labels := func() map[string]string {
		return map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: plan.ClusterSetLabel(cs)}
	}
	const ns = "prints-test"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The kinds the hub writes and watches: a ServiceExport in any namespace, a
	// GlobalIngress in strait-system. (ServiceImports and the derived Services and
	// EndpointSlices, and Peers, are not watched: the member reports their print,
	// dns/prints.)
	exp := func(name string) *mcsv1.ServiceExport {
		return &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels()}}
	}
	ingress := func(name string) *straitv1.GlobalIngress {
		return &straitv1.GlobalIngress{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: name, Labels: labels()},
			Spec: straitv1.GlobalIngressSpec{ServiceName: name, ServiceNamespace: ns}}
	}
	var made []client.Object
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			g.Expect(admin.Create(ctx, o)).To(Succeed())
			made = append(made, o)
		}
	}
	defer func() {
		for _, o := range made {
			if err := admin.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	}()
	// Before the connection: the informers' first list must count them.
	unlabelled := exp("i0")
	unlabelled.Labels = nil
	create(unlabelled, exp("i1"), ingress("s1"))

	gate := &watchGate{}
	cache := members.NewCache(members.Options{Scheme: f.env.Scheme, Watched: controllers.WatchedKinds(),
		Prints: controllers.MemberPrints, ProbeInterval: 200 * time.Millisecond})
	defer cache.Stop()
	m, err := cache.Connect(key, "v1", func() (*rest.Config, error) { return gate.config(f.env.Member("c3").Config), nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool { return m.Health().Connected }, 30*time.Second, 100*time.Millisecond).Should(BeTrue())

	prints := func() map[string]members.Print {
		out := map[string]members.Print{}
		for _, kind := range controllers.PrintedKinds() {
			p, ok := m.Print(kind)
			if ok {
				out[kind] = p
			}
		}
		return out
	}
	same := func(step string) map[string]members.Print {
		t.Helper()
		var want map[string]members.Print
		g.Eventually(func(g Gomega) {
			want = map[string]members.Print{}
			for _, kind := range controllers.PrintedKinds() {
				p, err := controllers.ListedPrint(ctx, admin, cs, kind)
				g.Expect(err).NotTo(HaveOccurred())
				want[kind] = p
			}
			g.Expect(prints()).To(Equal(want))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), step)
		return want
	}
	count := func(p map[string]members.Print) map[string]int {
		return map[string]int{"ServiceExport": p["ServiceExport"].N, "GlobalIngress": p["GlobalIngress"].N}
	}
	g.Expect(count(same("the first list"))).To(Equal(map[string]int{"ServiceExport": 1, "GlobalIngress": 1}))

	create(exp("i2"), ingress("s2"))
	g.Expect(count(same("creates"))).To(Equal(map[string]int{"ServiceExport": 2, "GlobalIngress": 2}))

	before := same("before updates")
	update := func(o client.Object, change func()) {
		t.Helper()
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		change()
		g.Expect(admin.Update(ctx, o)).To(Succeed())
	}
	i1 := &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "i1"}}
	update(i1, func() { i1.Annotations = map[string]string{"changed": "yes"} })
	after := same("updates")
	g.Expect(after["ServiceExport"]).NotTo(Equal(before["ServiceExport"]), "an update left the print as it was")

	s1 := &straitv1.GlobalIngress{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "s1"}}
	update(s1, func() { s1.Labels = nil })
	g.Expect(count(same("a label stripped"))["GlobalIngress"]).To(Equal(1))

	g.Expect(admin.Delete(ctx, exp("i2"))).To(Succeed())
	g.Expect(admin.Delete(ctx, ingress("s2"))).To(Succeed())
	g.Expect(count(same("deletes"))).To(Equal(map[string]int{"ServiceExport": 1, "GlobalIngress": 0}))

	// The relist: once every informer of the kinds below has had a watch refused, they
	// hear of nothing until they list again.
	gate.hold(true)
	g.Eventually(func() bool {
		return gate.refusedAll("serviceexports", "globalingresses")
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the informers' watches were not refused")
	g.Expect(admin.Delete(ctx, exp("i1"))).To(Succeed())
	update(s1, func() { s1.Labels = labels() })
	create(exp("i3"), ingress("s3"))
	lists := gate.listed("serviceexports")
	gate.hold(false)
	g.Expect(count(same("a relist"))).To(Equal(map[string]int{"ServiceExport": 1, "GlobalIngress": 2}))
	g.Expect(gate.listed("serviceexports")).To(BeNumerically(">", lists), "the ServiceExport informer did not list again")
}

// watchGate stands between a connection and its API server: watches end after a
// second (so that the informers watch again often), and while held every list and
// watch of a resource is refused with 410 Expired, which makes an informer list again.
type watchGate struct {
	mu      sync.Mutex
	held    bool
	refused map[string]int // watches refused while held, by resource
	lists   map[string]int // lists and streaming lists passed, by resource
}

func (w *watchGate) config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return gateTransport{gate: w, next: rt}
	}
	return out
}

func (w *watchGate) hold(held bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = held
	w.refused = map[string]int{}
}

func (w *watchGate) refusedAll(resources ...string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range resources {
		if w.refused[r] == 0 {
			return false
		}
	}
	return true
}

func (w *watchGate) listed(resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lists[resource]
}

type gateTransport struct {
	gate *watchGate
	next http.RoundTripper
}

func (t gateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/[namespaces/NS/]RESOURCE or /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE
	isResource := len(parts) >= 3 && parts[0] == "api" || len(parts) >= 4 && parts[0] == "apis"
	if !isResource {
		return t.next.RoundTrip(r)
	}
	resource := parts[len(parts)-1]
	q := r.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	t.gate.mu.Lock()
	held := t.gate.held
	switch {
	case held && watching:
		t.gate.refused[resource]++
	case !held && (!watching || q.Get("sendInitialEvents") == "true"):
		if t.gate.lists == nil {
			t.gate.lists = map[string]int{}
		}
		t.gate.lists[resource]++
	}
	t.gate.mu.Unlock()
	if held {
		status := apierrors.NewResourceExpired("the test holds the watches").ErrStatus
		status.APIVersion, status.Kind = "v1", "Status"
		body, err := json.Marshal(status)
		if err != nil {
			return nil, err
		}
		return &http.Response{StatusCode: http.StatusGone, Status: strconv.Itoa(http.StatusGone) + " Gone", Request: r,
			Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
	}
	if watching && q.Get("sendInitialEvents") != "true" {
		q.Set("timeoutSeconds", "1")
		r = r.Clone(r.Context())
		r.URL.RawQuery = q.Encode()
	}
	return t.next.RoundTrip(r)
}
