package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
)

// conn is one member as this reconcile sees it.
type conn struct {
	name       string
	kubeConfig *meta.KubeConfigReference
	// member is nil when no connection could be built (e.g. no kubeconfig Secret).
	member *members.Member
	// err says why the member cannot be written now; nil when it can.
	err error
	// removed: the cluster left spec.clusters; everything the hub wrote there goes.
	removed bool
	// noKubeConfig: the kubeconfig could not be read (the Secret is gone or broken).
	noKubeConfig bool
	// sameAs is, for a removed cluster, the cluster of the spec it is (the same
	// kube-system UID): a second entry for one cluster taken out. What the hub wrote
	// there is that cluster's now, and its own pass prunes the rest; pruning by label
	// through this connection would take that cluster's objects too.
	sameAs string
}

func (c *conn) reachable() bool { return c.member != nil && c.err == nil }

// connect returns a connection for every cluster of the spec, and for every cluster that
// left it but may still hold objects (known: remembered in a ClusterSetMember or in
// status; or still connected), probed
// in parallel. A member that cannot be reached is recorded, never waited for.
// Each member's kubeconfig Secret is read again unless the member answers through a
// connection made from it less than kubeConfigRecheck ago (reread: a reconcile someone
// asked for reads them all).
func (r *ClusterSetReconciler) connect(ctx context.Context, obj *straitv1.ClusterSet, known map[string]*straitv1.ClusterStatus, reread bool) map[string]*conn {
	cs := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	conns := map[string]*conn{}
	for i := range obj.Spec.Clusters {
		c := &obj.Spec.Clusters[i]
		conns[c.Name] = &conn{name: c.Name, kubeConfig: c.KubeConfig}
	}
	for name, c := range known {
		if _, ok := conns[name]; !ok {
			conns[name] = &conn{name: name, kubeConfig: c.KubeConfig, removed: true}
		}
	}
	for _, k := range r.members.Keys(cs) {
		if _, ok := conns[k.Cluster]; !ok {
			conns[k.Cluster] = &conn{name: k.Cluster, removed: true, member: r.members.Get(k)}
		}
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.connectOne(ctx, obj, cs, c, reread)
		}()
	}
	wg.Wait()
	r.matchRemoved(cs, conns)
	return conns
}

// matchRemoved finds the removed clusters that are a cluster still in the spec (an
// entry registered twice, taken out) and marks them sameAs it. That cluster's next pass
// is a full one, so that it prunes what was written there under the other name.
func (r *ClusterSetReconciler) matchRemoved(cs types.NamespacedName, conns map[string]*conn) {
	kept := map[types.UID]string{}
	for _, c := range conns {
		if !c.removed && c.member != nil {
			if uid := c.member.KnownKubeSystemUID(); uid != "" {
				kept[uid] = c.name
			}
		}
	}
	for _, c := range conns {
		if !c.removed || c.member == nil {
			continue
		}
		if same, ok := kept[c.member.KnownKubeSystemUID()]; ok {
			c.sameAs = same
			r.appliedFor(members.Key{ClusterSet: cs, Cluster: same}).failed()
		}
	}
}

func (r *ClusterSetReconciler) connectOne(ctx context.Context, obj *straitv1.ClusterSet, cs types.NamespacedName, c *conn, reread bool) {
	key := members.Key{ClusterSet: cs, Cluster: c.name}
	if c.member == nil && !reread {
		c.member = r.recentConnection(key, c.kubeConfig)
	}
	if c.member == nil {
		read := time.Now()
		kc, err := r.kubeConfig(ctx, obj.Namespace, c.kubeConfig)
		if err != nil {
			c.err, c.noKubeConfig = err, true
			// Keep writing through the last good connection if the Secret went away:
			// it is how the hub cleans up a cluster whose Secret was deleted with it.
			c.member = r.members.Get(key)
			if c.member == nil {
				return
			}
		} else if c.member, err = r.connectMember(key, kc); err != nil {
			c.err = err
			return
		} else {
			r.kubeConfigsRead.Store(key, kubeConfigRead{at: read, ref: c.kubeConfig.DeepCopy()})
		}
	}
	err := c.member.Probe(ctx)
	// Which cluster this is, before anything is written to it or to another entry: two
	// entries that are one cluster stall the ClusterSet (plan's sameClusters), and a
	// removed entry that is a cluster still in the spec is not pruned (matchRemoved).
	// It is read as soon as the API server answers, while the informers may still be
	// listing, so that a second connection to a cluster is known before the first one
	// writes.
	if err == nil || errors.Is(err, members.ErrListing) {
		if _, uerr := c.member.KubeSystemUID(ctx); uerr != nil && err == nil {
			err = uerr
		}
	}
	c.err = err
}

// kubeConfigRecheck is how long a member that answers keeps the connection made from
// its kubeconfig Secret before the Secret is read again. Secrets are not watched; the
// hub read 255 of them every reconcile at 255 members, a tenth of an export's time.
// A member that does not answer or refused a write (its credentials may have been
// rotated), a stale connection, a changed kubeConfig reference and a reconcile someone
// asked for (reconcile.fluxcd.io/requestedAt) read it at once.
const kubeConfigRecheck = 30 * time.Second

// kubeConfigRead is when the hub last read a member's kubeconfig, and through which
// reference.
type kubeConfigRead struct {
	at  time.Time
	ref *meta.KubeConfigReference
}

// recentConnection is the member's connection if its kubeconfig was read less than
// kubeConfigRecheck ago through the same reference and it answered its last probe;
// nil when the Secret must be read.
func (r *ClusterSetReconciler) recentConnection(key members.Key, ref *meta.KubeConfigReference) *members.Member {
	v, ok := r.kubeConfigsRead.Load(key)
	if !ok {
		return nil
	}
	last := v.(kubeConfigRead)
	if time.Since(last.at) >= kubeConfigRecheck || !equality.Semantic.DeepEqual(last.ref, ref) {
		return nil
	}
	m := r.connection(key)
	if m == nil || m.Stale() || !m.Health().Connected {
		return nil
	}
	return m
}

// connection is the member's connection as it stands: its stand-in in a test that has
// one, else the cache's.
func (r *ClusterSetReconciler) connection(key members.Key) *members.Member {
	if m := r.standIn(key); m != nil {
		return m
	}
	return r.members.Get(key)
}

// connectMember is the connection to a member from the cache (members.Cache.Connect),
// or, for a member a test stands in for (standIns), its stand-in: the kubeconfig Secret
// is read all the same, and the stand-in is probed and written as a connection is.
func (r *ClusterSetReconciler) connectMember(key members.Key, kc *kubeConfig) (*members.Member, error) {
	if m := r.standIn(key); m != nil {
		return m, nil
	}
	return r.members.Connect(key, kc.version, kc.restConfig)
}

// standIn is the stand-in a test put in place of the member, nil for the others and
// always in straitd.
func (r *ClusterSetReconciler) standIn(key members.Key) *members.Member {
	if r.standIns == nil {
		return nil
	}
	return r.standIns(key)
}

// kubeConfig is a member's kubeconfig as the hub read it: the Secret's content and its
// version (UID and resourceVersion), or the hub's own connection.
type kubeConfig struct {
	data    []byte
	version string
	// local is the hub's own connection, for a cluster without a kubeConfig.
	local *rest.Config
	// source names the Secret in errors.
	source string
}

// restConfig parses the kubeconfig (members.Cache.Connect asks only for a version it
// has no connection of).
func (kc *kubeConfig) restConfig() (*rest.Config, error) {
	if kc.local != nil {
		return kc.local, nil
	}
	cfg, err := members.RESTConfigFromKubeConfig(kc.data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kc.source, err)
	}
	return cfg, nil
}

// kubeConfig reads a member's kubeconfig. Without a reference, the member is the hub's
// own cluster.
func (r *ClusterSetReconciler) kubeConfig(ctx context.Context, ns string, ref *meta.KubeConfigReference) (*kubeConfig, error) {
	if ref == nil || ref.SecretRef == nil {
		if ref != nil && ref.ConfigMapRef != nil {
			return nil, fmt.Errorf("kubeConfig.configMapRef (workload identity) is not supported; use secretRef")
		}
		return &kubeConfig{local: r.cfg.Local, version: "local"}, nil
	}
	return readKubeConfig(ctx, r.secrets, ns, ref.SecretRef)
}

// KubeConfigFromSecret reads a member's connection from the hub's Secret that a
// cluster's kubeConfig.secretRef names (key "value", else "value.yaml", as Flux reads
// it), and a version of it: the Secret's UID and resourceVersion.
func KubeConfigFromSecret(ctx context.Context, secrets client.Reader, ns string, ref *meta.SecretKeyReference) (*rest.Config, string, error) {
	kc, err := readKubeConfig(ctx, secrets, ns, ref)
	if err != nil {
		return nil, "", err
	}
	cfg, err := kc.restConfig()
	if err != nil {
		return nil, "", err
	}
	return cfg, kc.version, nil
}

// readKubeConfig reads the kubeconfig Secret a secretRef names, unparsed.
func readKubeConfig(ctx context.Context, secrets client.Reader, ns string, ref *meta.SecretKeyReference) (*kubeConfig, error) {
	sec := &corev1.Secret{}
	if err := secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, sec); err != nil {
		return nil, fmt.Errorf("reading kubeconfig Secret %s/%s: %w", ns, ref.Name, err)
	}
	var data []byte
	if ref.Key != "" {
		data = sec.Data[ref.Key]
	} else if data = sec.Data[plan.DefaultKubeConfigKey]; len(data) == 0 {
		data = sec.Data["value.yaml"]
	}
	if len(data) == 0 {
		keys := make([]string, 0, len(sec.Data))
		for k := range sec.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("kubeconfig Secret %s/%s has no key %q (keys: %v)", ns, ref.Name, keyOrDefault(ref.Key), keys)
	}
	return &kubeConfig{data: data, version: string(sec.UID) + "/" + sec.ResourceVersion,
		source: fmt.Sprintf("kubeconfig Secret %s/%s", ns, ref.Name)}, nil
}

func keyOrDefault(k string) string {
	if k == "" {
		return plan.DefaultKubeConfigKey
	}
	return k
}
