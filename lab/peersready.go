package lab

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
)

// WaitPeersConnected waits until the cluster holds a Peer for each of the others joined
// with it and its active gateway has health-checked every one as Connected. Traffic may
// cross before that (a cable's handshake is quicker than the first round of health
// checks, every --health-interval), but strait show and strait diagnose read the Peers:
// a lab called ready shows every cable up in them.
func (l *Lab) WaitPeersConnected(ctx context.Context, c topology.Cluster, others []string, timeout time.Duration) error {
	cfg, err := l.inNamespaceConfig(c.Name, c.ControlPlane.Namespace)()
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	peers := client.Resource(straitv1.GroupVersion.WithResource("peers")).Namespace(straitv1.SystemNamespace)
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		list, err := peers.List(ctx, metav1.ListOptions{})
		var missing []string
		if err == nil {
			missing = unconnected(list.Items, others)
			if len(missing) == 0 {
				l.progress("%s: every Peer Connected (%d, %.1fs)", c.Name, len(others), time.Since(start).Seconds())
				return nil
			}
			err = fmt.Errorf("not Connected: %s", strings.Join(missing, "; "))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the cables did not come up within %s: %w (kubectl -n %s get peers; the active gateway's agent log)",
				c.Name, timeout, err, straitv1.SystemNamespace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// unconnected names each of the clusters others without a Connected Peer, with the
// state its Peer shows.
func unconnected(items []unstructured.Unstructured, others []string) []string {
	state := map[string]string{}
	for _, p := range items {
		id, _, _ := unstructured.NestedString(p.Object, "spec", "clusterID")
		s, _, _ := unstructured.NestedString(p.Object, "status", "state")
		state[id] = s
	}
	var out []string
	for _, o := range others {
		switch s, ok := state[o]; {
		case !ok:
			out = append(out, o+": no Peer yet")
		case s != "Connected":
			if s == "" {
				s = "not health-checked yet"
			}
			out = append(out, o+": "+s)
		}
	}
	sort.Strings(out)
	return out
}

// joinedOthers are the clusters joined with c: the lab's clusters less the unjoined ones
// and c itself.
func joinedOthers(t *topology.Lab, unjoined []string, c string) []string {
	var out []string
	for _, x := range t.Clusters {
		if x.Name != c && !slices.Contains(unjoined, x.Name) {
			out = append(out, x.Name)
		}
	}
	return out
}
