package labtest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/require"
)

// ClusterSetIP waits until the sample ServiceImport name in cluster carries its
// clusterset IP (spec.ips), the cluster IP of the Service the hub derived for it there,
// and returns it.
func (e *Env) ClusterSetIP(t testing.TB, cluster, name string) string {
	t.Helper()
	c := e.Client(t, cluster)
	ctx := context.Background()
	var ip string
	require.Eventually(t, Converge, cluster+": the clusterset IP of "+name, func() error {
		imp := &mcsv1.ServiceImport{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: lab.SampleNamespace, Name: name}, imp); err != nil {
			return err
		}
		svc, err := e.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(ctx, plan.DerivedServiceName(name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(imp.Spec.IPs) != 1 || imp.Spec.IPs[0] != svc.Spec.ClusterIP {
			return fmt.Errorf("ServiceImport spec.ips %v, derived Service %s's cluster IP %s", imp.Spec.IPs, svc.Name, svc.Spec.ClusterIP)
		}
		ip = svc.Spec.ClusterIP
		return nil
	})
	return ip
}

// ExportWhereamiFrom makes whereami-cs's export in a ClusterSet come from clusters: a
// change for Env.UpdateClusterSet or ChangeClusterSet.
func ExportWhereamiFrom(clusters ...string) func(*straitv1.ClusterSet) {
	return func(cs *straitv1.ClusterSet) {
		for i := range cs.Spec.Exports {
			if cs.Spec.Exports[i].Name == lab.WhereamiCS {
				cs.Spec.Exports[i].Clusters = clusters
			}
		}
	}
}

// DerivedSliceClusters are the clusters with ready endpoints in the EndpointSlices of
// the Service the hub derived in cluster for the sample import name, sorted; with types,
// in the slices of those address types alone (a dual-stack import has a slice of each
// family per source cluster).
func (e *Env) DerivedSliceClusters(t testing.TB, cluster, name string, types ...discoveryv1.AddressType) ([]string, error) {
	t.Helper()
	list, err := e.HostClient(t, cluster).DiscoveryV1().EndpointSlices(lab.SampleNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + plan.DerivedServiceName(name)})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		if len(types) > 0 && !slices.Contains(types, s.AddressType) {
			continue
		}
		src := s.Labels[straitv1.LabelSourceCluster]
		for _, ep := range s.Endpoints {
			if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) && !slices.Contains(out, src) {
				out = append(out, src)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Spread is who answered n connections made by try, each a new one: the count per
// cluster and per pod, and the errors of those that failed.
type Spread struct {
	Clusters, Pods map[string]int
	Callers        map[string]int
	Failed         []error
}

// Connect makes n connections with try and counts who answered.
func Connect(n int, try func() (workload.Answer, error)) Spread {
	s := Spread{Clusters: map[string]int{}, Pods: map[string]int{}, Callers: map[string]int{}}
	for range n {
		a, err := try()
		if err != nil {
			s.Failed = append(s.Failed, err)
			continue
		}
		s.Clusters[a.Cluster]++
		s.Pods[a.Cluster+"/"+a.Pod]++
		s.Callers[a.Caller]++
	}
	return s
}

// String is the spread in one line, for the test's log.
func (s Spread) String() string {
	return fmt.Sprintf("by cluster %v, by pod %v, callers %v, %d failed", s.Clusters, s.Pods, s.Callers, len(s.Failed))
}

// CheckBalanced fails t unless every cluster in want answered at least share of the
// connections, nobody else answered and none failed.
func (s Spread) CheckBalanced(t testing.TB, share float64, want ...string) {
	t.Helper()
	total := len(s.Failed)
	for _, n := range s.Clusters {
		total += n
	}
	if len(s.Failed) > 0 {
		t.Errorf("%d of %d connections failed, the first: %v", len(s.Failed), total, s.Failed[0])
	}
	for c, n := range s.Clusters {
		if !slices.Contains(want, c) {
			t.Errorf("%s answered %d of %d connections, want only %v", c, n, total, want)
		}
	}
	for _, c := range want {
		if n := s.Clusters[c]; float64(n) < share*float64(total) {
			t.Errorf("%s answered %d of %d connections, want at least %.0f%% (%s)", c, n, total, share*100, s)
		}
	}
}
