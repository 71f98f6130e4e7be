package labtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/require"
)

// Client is a controller-runtime client of a cluster (or the hub) through its loopback
// forwarder, with Strait's and the MCS kinds.
func (e *Env) Client(t testing.TB, cluster string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Lab.State().KubeconfigPath(cluster))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ClusterSet reads the lab's ClusterSet from the hub.
func (e *Env) ClusterSet(t testing.TB) *straitv1.ClusterSet {
	t.Helper()
	list := &straitv1.ClusterSetList{}
	if err := e.Client(t, topology.HubName).List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("hub: %d ClusterSets, want 1", len(list.Items))
	}
	return &list.Items[0]
}

// UpdateClusterSet changes the hub's ClusterSet as a commit synced by Flux would; the
// error is the API server's (a refusal of the webhook, say).
func (e *Env) UpdateClusterSet(t testing.TB, change func(*straitv1.ClusterSet)) error {
	t.Helper()
	c := e.Client(t, topology.HubName)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cs := e.ClusterSet(t)
		change(cs)
		return c.Update(context.Background(), cs)
	})
}

// RestoreClusterSetSpec puts the ClusterSet's spec back to what it is now when the test
// ends, so tests sharing the lab each start from the lab's own ClusterSet.
func (e *Env) RestoreClusterSetSpec(t testing.TB) {
	t.Helper()
	spec := *e.ClusterSet(t).Spec.DeepCopy()
	t.Cleanup(func() {
		if err := e.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { cs.Spec = spec }); err != nil {
			t.Errorf("restoring the ClusterSet: %v", err)
		}
	})
}

// ActiveGateway is the node of the cluster whose Gateway object says active, waiting up
// to a minute for one.
func (e *Env) ActiveGateway(t testing.TB, cluster string) topology.Node {
	t.Helper()
	c, ok := e.Topo.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s in the lab", cluster)
	}
	var node topology.Node
	require.Eventually(t, time.Minute, cluster+": an active gateway", func() error {
		gws := &straitv1.GatewayList{}
		if err := e.Client(t, cluster).List(context.Background(), gws, client.InNamespace(straitv1.SystemNamespace)); err != nil {
			return err
		}
		var seen []string
		for _, g := range gws.Items {
			seen = append(seen, g.Name+" "+string(g.Spec.HAState)+" "+string(g.Spec.Driver))
			if g.Spec.HAState != straitv1.HAActive {
				continue
			}
			for _, n := range c.Nodes {
				if n.Name == g.Spec.NodeName {
					node = n
					return nil
				}
			}
		}
		return fmt.Errorf("gateways: %v", seen)
	})
	return node
}
