package labtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/gitserver"
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
	// No client-side limit: client-go's default (5 requests a second, bursts of 10)
	// would make a test that polls every 10 ms see a change up to a second late.
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
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

// UpdateClusterSet changes the ClusterSet in the lab's repo with one commit, as a person
// would, asks the lab's GitOps controller (Flux, or Argo CD) to sync it and waits until it
// applied it and the ClusterSet is Ready. The error is the controller's when it did not
// (a *lab.SyncError, whose message carries the webhook's refusal); the commit stays, for
// the test to revert.
func (e *Env) UpdateClusterSet(t testing.TB, change func(*straitv1.ClusterSet)) error {
	t.Helper()
	_, err := e.CommitClusterSet(t, ChangeClusterSet(t, e.RepoClusterSet(t), change), "e2e: change the ClusterSet in "+t.Name())
	return err
}

// ChangeClusterSet is the ClusterSet file data with change made to it, as YAML (its
// comments are lost).
func ChangeClusterSet(t testing.TB, data []byte, change func(*straitv1.ClusterSet)) []byte {
	t.Helper()
	cs := &straitv1.ClusterSet{}
	if err := yaml.UnmarshalStrict(data, cs); err != nil {
		t.Fatalf("%s in the lab's repo: %v", lab.RepoClusterSet, err)
	}
	change(cs)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	if err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RepoClusterSet is the ClusterSet file at the head of the lab's repo.
func (e *Env) RepoClusterSet(t testing.TB) []byte {
	t.Helper()
	ctx := context.Background()
	head, err := e.Lab.Repo().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := e.Lab.Repo().File(ctx, head, lab.RepoClusterSet)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// CommitClusterSet commits data as the repo's ClusterSet, asks the GitOps controller to
// sync (as a push does) and waits until it applied it with the ClusterSet Ready, or gave
// up on it with a *lab.SyncError; it returns the commit.
func (e *Env) CommitClusterSet(t testing.TB, data []byte, message string) (string, error) {
	t.Helper()
	commit := e.PushClusterSet(t, data, message)
	return commit, e.WaitSynced(t, commit)
}

// PushClusterSet commits the ClusterSet file and pushes, which asks the GitOps
// controller to sync at once, and returns the commit without waiting for it.
func (e *Env) PushClusterSet(t testing.TB, data []byte, message string) string {
	t.Helper()
	by := gitserver.Author{Name: "e2e", Email: "e2e@strait.invalid", When: time.Now()}
	commit, err := e.Lab.Push(context.Background(), map[string][]byte{lab.RepoClusterSet: data}, message, by)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

// WaitSynced waits until the GitOps controller applied commit and the ClusterSet is
// Ready at it, or it refused the commit or gave up on its health (then it returns the
// lab.SyncError). It does not wait for the controller's own health check to see the
// ClusterSet Ready (lab.WaitApplied: up to 5 s a commit with Flux); a test about what
// the controller reports waits with lab.WaitSynced.
func (e *Env) WaitSynced(t testing.TB, commit string) error {
	t.Helper()
	_, err := e.Lab.WaitApplied(context.Background(), commit, 2*time.Minute)
	if se := (*lab.SyncError)(nil); err != nil && !errors.As(err, &se) {
		t.Fatal(err)
	}
	return err
}

// RestoreClusterSetSpec commits the repo's ClusterSet as it is now back when the test
// ends (a revert), so tests sharing the lab each start from the lab's own ClusterSet,
// and waits for the GitOps controller itself to say it is Ready (lab.WaitSynced): a
// health check of the revert still running would judge the next test's faults (a cut
// link, an API server down) and hold that test's commits behind it.
func (e *Env) RestoreClusterSetSpec(t testing.TB) {
	t.Helper()
	data := e.RepoClusterSet(t)
	t.Cleanup(func() {
		commit := e.PushClusterSet(t, data, "e2e: revert "+t.Name())
		if _, err := e.Lab.WaitSynced(context.Background(), commit, 2*time.Minute); err != nil {
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

// RebuildHub loses the hub cluster, as when it is replaced: every process of it (etcd,
// the control plane, its node's kubelet and containerd, kube-proxy, CoreDNS) is killed
// and etcd's data removed; then "lab up" builds it again from nothing but the manifests
// and the same git repo (the node starts afresh, the Secrets are made again out of
// band). It returns how long lab up took.
func (e *Env) RebuildHub(t testing.TB) time.Duration {
	t.Helper()
	st := e.Lab.State()
	var pids []int
	for key, pid := range st.AllPids() {
		cluster, name, _ := strings.Cut(key, "/")
		if cluster != topology.HubName || !netns.Alive(pid) {
			continue
		}
		pids = append(pids, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing the hub's %s (pid %d): %v", name, pid, err)
		}
	}
	require.Eventually(t, 30*time.Second, "the hub's control plane gone", func() error {
		for _, pid := range pids {
			if netns.Alive(pid) {
				return fmt.Errorf("pid %d still runs", pid)
			}
		}
		return nil
	})
	if err := os.RemoveAll(filepath.Join(st.ClusterDir(topology.HubName), "etcd")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.UpAgain(t)
	return time.Since(start)
}

// HubMemberKubeconfig writes the kubeconfig the hub holds for a member (the Secret the
// lab's ClusterSet names: the strait-hub-access token) with its server moved to the
// member's loopback forwarder, and returns its path: a tool given it (strait diff) acts
// in the member as the hub does, and the audit holds the member role to what it did. The
// hub's own server address, on the member's LAN, has no route from the host.
func (e *Env) HubMemberKubeconfig(t testing.TB, cluster string) string {
	t.Helper()
	rec, err := e.Lab.State().ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	var cs straitv1.ClusterSet
	if err := yaml.Unmarshal(rec.ClusterSet, &cs); err != nil {
		t.Fatal(err)
	}
	var ref *straitv1.ClusterSpec
	for i, c := range cs.Spec.Clusters {
		if c.Name == cluster && c.KubeConfig != nil {
			ref = &cs.Spec.Clusters[i]
		}
	}
	if ref == nil {
		t.Fatalf("the lab's ClusterSet gives %s no kubeConfig", cluster)
		return ""
	}
	ns := cs.Namespace
	if ns == "" {
		ns = straitv1.SystemNamespace
	}
	sec, err := e.HostClient(t, topology.HubName).CoreV1().Secrets(ns).Get(context.Background(), ref.KubeConfig.SecretRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := ref.KubeConfig.SecretRef.Key
	if key == "" {
		key = "value"
	}
	kc, err := clientcmd.Load(sec.Data[key])
	if err != nil {
		t.Fatalf("the hub's kubeconfig of %s: %v", cluster, err)
	}
	host, err := clientcmd.LoadFromFile(e.Lab.State().KubeconfigPath(cluster))
	if err != nil {
		t.Fatal(err)
	}
	var server string
	for _, c := range host.Clusters {
		server = c.Server
	}
	for _, c := range kc.Clusters {
		c.Server = server
	}
	path := filepath.Join(t.TempDir(), cluster+"-hub-access.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
