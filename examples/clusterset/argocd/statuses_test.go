package argocd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
	"github.com/straitnet/strait/test/require"
)

var update = flag.Bool("update", false, "regenerate testdata/*.json from the hub controller on envtest")

// TestGenerateStatuses drives a real hub controller over a real hub and members through
// every state the health check tells apart and compares each ClusterSet, as the hub's
// API server returns it, with testdata/<state>.json, which the health tests read: a
// change of what the hub writes fails here until the files are made again with -update
// (and the health tests then judge the new statuses). What differs from run to run
// (times, UIDs, resource versions, the hub's build) is left out of the comparison. No
// webhook runs: a refused ClusterSet must get in to be Stalled, as when git syncs it
// while the webhook is down.
func TestGenerateStatuses(t *testing.T) {
	ctx := context.Background()
	env, err := clusters.Start(ctx, clusters.Options{Members: []string{"c1", "c2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	stopHub, err := hubtest.RunController(env, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stopHub() }()
	hub := env.Hub.Client

	ready := clusterSet(env, "clusterset", "10.2.0.0/16")
	if err := hub.Create(ctx, ready); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, hub, ready, meta.ReadyCondition, metav1.ConditionTrue, straitv1.ReasonReconciliationOK)
	save(t, hub, ready, "ready")

	c2 := env.Member("c2")
	if err := c2.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, hub, ready, meta.ReadyCondition, metav1.ConditionFalse, straitv1.ReasonMembersUnreachable)
	save(t, hub, ready, "member-unreachable")
	if err := c2.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, hub, ready, meta.ReadyCondition, metav1.ConditionTrue, straitv1.ReasonReconciliationOK)

	stalled := clusterSet(env, "overlapping", "10.1.128.0/17")
	if err := hub.Create(ctx, stalled); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, hub, stalled, meta.StalledCondition, metav1.ConditionTrue, straitv1.ReasonValidationFailed)
	save(t, hub, stalled, "stalled")

	// With the hub stopped, a spec change stays unobserved and a new ClusterSet gets no
	// status at all.
	stopHub()
	stopHub = func() {}
	change(t, hub, ready, func(cs *straitv1.ClusterSet) { cs.Spec.Interval = &metav1.Duration{Duration: 5 * time.Minute} })
	save(t, hub, ready, "not-observed")
	fresh := clusterSet(env, "fresh", "10.2.0.0/16")
	if err := hub.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	save(t, hub, fresh, "new")
	change(t, hub, ready, func(cs *straitv1.ClusterSet) { cs.Spec.Suspend = true })
	save(t, hub, ready, "suspended")
}

// clusterSet is a ClusterSet over c1 and c2, c2 with the given pod CIDR.
func clusterSet(env *clusters.Env, name, c2PodCIDR string) *straitv1.ClusterSet {
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.HubNamespace}}
	for i, m := range env.Members {
		pod := fmt.Sprintf("10.%d.0.0/16", i+1)
		if m.Name == "c2" {
			pod = c2PodCIDR
		}
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{
			Name:         m.Name,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: m.KubeConfigSecret}},
			PodCIDRs:     []string{pod},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 101+i)},
		})
	}
	return cs
}

func waitCondition(t *testing.T, hub client.Client, cs *straitv1.ClusterSet, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	require.Eventually(t, time.Minute, fmt.Sprintf("%s: %s=%s (%s)", cs.Name, typ, status, reason), func() error {
		cur := &straitv1.ClusterSet{}
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		return nil
	})
}

func change(t *testing.T, hub client.Client, cs *straitv1.ClusterSet, f func(*straitv1.ClusterSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &straitv1.ClusterSet{}
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		f(cur)
		return hub.Update(context.Background(), cur)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// save compares the ClusterSet as the hub's API server returns it (without
// managedFields, which only make the file long) with testdata/<state>.json, or with
// -update writes it there.
func save(t *testing.T, hub client.Client, cs *straitv1.ClusterSet, state string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(straitv1.GroupVersion.WithKind(straitv1.ClusterSetKind))
	if err := hub.Get(context.Background(), client.ObjectKeyFromObject(cs), u); err != nil {
		t.Fatal(err)
	}
	u.SetManagedFields(nil)
	data, err := json.MarshalIndent(u.Object, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", state+".json")
	if *update {
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil { //nolint:gosec // testdata is read by everyone
			t.Fatal(err)
		}
		t.Logf("%s: generation %d", path, u.GetGeneration())
		return
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, got := comparable(t, committed), comparable(t, data)
	if want != got {
		t.Errorf("%s: the hub writes another status than the committed one, which the health tests judge; "+
			"make it again with go test -run TestGenerateStatuses -update ./examples/clusterset/argocd/ and check the health tests:\ncommitted %s\nwritten   %s",
			path, want, got)
	}
}

// comparable is a ClusterSet's JSON without what differs from run to run: every time
// (RFC 3339 strings), UID (the object's, the members' kube-system namespaces') and
// loopback port (the envtest API servers'), the resource version and creation time, and
// the hub's own build in status.hub (its revision is the commit's).
func comparable(t *testing.T, data []byte) string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "creationTimestamp"} {
			delete(md, k)
		}
	}
	if st, ok := obj["status"].(map[string]any); ok {
		delete(st, "hub")
	}
	out, err := json.Marshal(withoutRunDetails("", obj))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// loopbackPort is an address of an envtest API server.
var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// withoutRunDetails is v, the value of key, with every time, UID and loopback port
// replaced.
func withoutRunDetails(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = withoutRunDetails(k, x)
		}
	case []any:
		for i, x := range v {
			v[i] = withoutRunDetails(key, x)
		}
	case string:
		if _, err := time.Parse(time.RFC3339, v); err == nil {
			return "<time>"
		}
		if strings.HasSuffix(strings.ToLower(key), "uid") {
			return "<uid>"
		}
		return loopbackPort.ReplaceAllString(v, "127.0.0.1:<port>")
	}
	return v
}
