package controllers_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/clustersetip"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/clusters"
)

// runClusterSetIPWriter runs, in a member, what strait dns runs there to write the
// clusterset IPs, until the test ends.
func runClusterSetIPWriter(t *testing.T, m *clusters.Cluster) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clustersetip.RunWithSource(ctx, m.Config, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("clusterset IP writer in %s: %v", m.Name, err)
		}
	})
}

// derivedEndpoints lists, per source cluster, the addresses in the derived Service's
// EndpointSlices of an import, and says whether any of them carries the MCS
// source-cluster label.
func derivedEndpoints(g Gomega, c client.Client, ns, name string) (map[string][]string, bool) {
	var list discoveryv1.EndpointSliceList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: plan.DerivedServiceName(name)})).To(Succeed())
	out := map[string][]string{}
	mcs := false
	for _, s := range list.Items {
		_, has := s.Labels[mcsv1.LabelSourceCluster]
		mcs = mcs || has
		for _, ep := range s.Endpoints {
			out[s.Labels[straitv1.LabelSourceCluster]] = append(out[s.Labels[straitv1.LabelSourceCluster]], ep.Addresses...)
		}
	}
	for _, a := range out {
		sort.Strings(a)
	}
	return out, mcs
}

// A ClusterSetIP export gets, in every member, a derived Service whose cluster IP the
// member's API server allocates and strait dns's writer puts into the ServiceImport's
// spec.ips; the hub's later applies leave spec.ips alone; its slices hold every
// exporting cluster's ready pods; a cluster that stops exporting drops out of them.
func TestClusterSetIPIsTheDerivedServicesClusterIP(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "vip", "echo", "10.0.0.51", "10.1.0.51", "10.1.0.52")
	serveService(t, f.env.Member("c2"), "vip", "echo", "10.0.0.52", "10.2.0.51")
	for _, m := range f.env.Members {
		runClusterSetIPWriter(t, m)
	}
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "vip", Name: "echo"}}
	f.create(t, cs)
	start := time.Now()

	key := types.NamespacedName{Namespace: "vip", Name: "echo"}
	ips := map[string][]string{}
	readySince := map[string]metav1.Time{}
	for _, m := range f.env.Members {
		g.Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(m.Client.Get(ctx, types.NamespacedName{Namespace: "vip", Name: plan.DerivedServiceName("echo")}, svc)).To(Succeed())
			g.Expect(svc.Spec.Selector).To(BeEmpty())
			g.Expect(svc.Spec.ClusterIPs).To(HaveLen(1))
			si := &mcsv1.ServiceImport{}
			g.Expect(m.Client.Get(ctx, key, si)).To(Succeed())
			g.Expect(si.Spec.IPs).To(Equal(svc.Spec.ClusterIPs))
			g.Expect(si.Spec.IPFamilies).To(Equal([]corev1.IPFamily{corev1.IPv4Protocol}))
			ips[m.Name] = si.Spec.IPs
			ready := apimeta.FindStatusCondition(si.Status.Conditions, string(mcsv1.ServiceImportConditionReady))
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.LastTransitionTime.IsZero()).To(BeFalse(), "the hub stamps lastTransitionTime")
			readySince[m.Name] = ready.LastTransitionTime
			eps, mcs := derivedEndpoints(g, m.Client, "vip", "echo")
			g.Expect(mcs).To(BeFalse(), "a derived slice carries the MCS source-cluster label")
			g.Expect(eps).To(Equal(map[string][]string{"c1": {"10.1.0.51", "10.1.0.52"}, "c2": {"10.2.0.51"}}))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed(), "member %s", m.Name)
	}
	t.Logf("clusterset IPs %v in every member %v after the ClusterSet", ips, time.Since(start).Round(time.Millisecond))

	// c2 stops exporting: it drops out of every member's derived slices; the hub
	// re-applies the imports, and the clusterset IPs stay what they were.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Exports[0].Clusters = []string{"c1"} })
	start = time.Now()
	for _, m := range f.env.Members {
		g.Eventually(func(g Gomega) {
			eps, _ := derivedEndpoints(g, m.Client, "vip", "echo")
			g.Expect(eps).To(Equal(map[string][]string{"c1": {"10.1.0.51", "10.1.0.52"}}))
			si := &mcsv1.ServiceImport{}
			g.Expect(m.Client.Get(ctx, key, si)).To(Succeed())
			g.Expect(si.Status.Clusters).To(ConsistOf(mcsv1.ClusterStatus{Cluster: "c1"}))
			// Still Ready, with another message: the transition time stays.
			ready := apimeta.FindStatusCondition(si.Status.Conditions, string(mcsv1.ServiceImportConditionReady))
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Message).To(ContainSubstring("imported from c1;"))
			g.Expect(ready.LastTransitionTime).To(Equal(readySince[m.Name]))
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed(), "member %s", m.Name)
	}
	t.Logf("c2 left every member's derived slices %v after the change", time.Since(start).Round(time.Millisecond))
	for _, m := range f.env.Members {
		g.Consistently(func(g Gomega) []string {
			si := &mcsv1.ServiceImport{}
			g.Expect(m.Client.Get(ctx, key, si)).To(Succeed())
			return si.Spec.IPs
		}, time.Second, 100*time.Millisecond).Should(Equal(ips[m.Name]), "member %s", m.Name)
	}

	// Unexported: the derived Service and its slices go with the import.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Exports = nil })
	for _, m := range f.env.Members {
		g.Eventually(func(g Gomega) bool {
			err := m.Client.Get(ctx, types.NamespacedName{Namespace: "vip", Name: plan.DerivedServiceName("echo")}, &corev1.Service{})
			eps, _ := derivedEndpoints(g, m.Client, "vip", "echo")
			return client.IgnoreNotFound(err) == nil && err != nil && len(eps) == 0
		}, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "member %s", m.Name)
	}
}

// Exports whose ports differ in name (c1's one port has none, c2's is named) make an
// import whose union the API server would refuse as a Service's ports; the derived
// Service names every port and the members' API servers take it and its slices.
func TestDerivedServiceOfDifferentlyNamedPortsIsValid(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c2"), "mixed", "web", "10.0.0.61", "10.2.0.61")
	c1 := f.env.Member("c1").Client
	g.Expect(client.IgnoreAlreadyExists(c1.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mixed"}}))).To(Succeed())
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "mixed"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.62", Ports: []corev1.ServicePort{{Port: 81, Protocol: corev1.ProtocolTCP}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", Namespace: "mixed",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(""), Port: ptr(int32(8081)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.61"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}}}
	g.Expect(c1.Create(ctx, svc)).To(Succeed())
	g.Expect(c1.Create(ctx, slice)).To(Succeed())
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(c1.Delete(ctx, slice))
		_ = client.IgnoreNotFound(c1.Delete(ctx, svc))
	})
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "mixed", Name: "web"}}
	f.create(t, cs)
	c3 := f.env.Member("c3").Client
	g.Eventually(func(g Gomega) {
		d := &corev1.Service{}
		g.Expect(c3.Get(ctx, types.NamespacedName{Namespace: "mixed", Name: plan.DerivedServiceName("web")}, d)).To(Succeed())
		g.Expect(d.Spec.ClusterIP).NotTo(BeEmpty())
		var names []string
		for _, p := range d.Spec.Ports {
			names = append(names, fmt.Sprintf("%s %d", p.Name, p.Port))
		}
		g.Expect(names).To(Equal([]string{"http 80", "tcp-81 81"}))
		eps, _ := derivedEndpoints(g, c3, "mixed", "web")
		g.Expect(eps).To(Equal(map[string][]string{"c1": {"10.1.0.61"}, "c2": {"10.2.0.61"}}))
	}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
}
