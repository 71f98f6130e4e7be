package join

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/plan"
)

// kubeconfigKey is the key the hub reads a member's kubeconfig from (Flux's
// meta.KubeConfigReference default).
const kubeconfigKey = "value"

// hub is the hub cluster as the person's own credentials reach it.
type hub struct{ c client.Client }

func connectHub(kubeconfig, context string) (*hub, error) {
	cfg, err := cli.PersonConfig("the hub", kubeconfig, context, "--hub-kubeconfig")
	if err != nil {
		return nil, err
	}
	cfg.UserAgent, cfg.Timeout = userAgent, requestTimeout
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	return &hub{c: c}, nil
}

// kubeconfigSecret is the Secret the hub reads the member's kubeconfig from.
func kubeconfigSecret(namespace, name, cluster string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "strait", memberLabel: cluster}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{kubeconfigKey: kubeconfig},
	}
}

// memberLabel names the member whose kubeconfig a Secret holds.
const memberLabel = "strait.io/member"

// writeSecret creates the kubeconfig Secret, or replaces its data; it says whether it
// replaced one.
func (h *hub) writeSecret(ctx context.Context, s *corev1.Secret) (bool, error) {
	err := h.c.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		cur := &corev1.Secret{}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
			return false, err
		}
		cur.Data, cur.Type = s.Data, s.Type
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		for k, v := range s.Labels {
			cur.Labels[k] = v
		}
		if err := h.c.Update(ctx, cur); err != nil {
			return false, fmt.Errorf("replacing Secret %s/%s in the hub: %w", s.Namespace, s.Name, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating Secret %s/%s in the hub: %w", s.Namespace, s.Name, err)
	}
	return false, nil
}

// naming is where the hub's ClusterSets name a cluster: in their spec (git still wants
// it) or only in their status (the hub is still pruning it).
type naming struct {
	inSpec, inStatus []string
	// secret is the kubeconfig Secret a ClusterSet names for it, if any.
	secret string
}

func (h *hub) naming(ctx context.Context, cluster string) (naming, error) {
	var n naming
	list := &straitv1.ClusterSetList{}
	if err := h.c.List(ctx, list); err != nil {
		return n, fmt.Errorf("listing the hub's ClusterSets: %w", err)
	}
	for _, cs := range list.Items {
		id := cs.Namespace + "/" + cs.Name
		for _, c := range cs.Spec.Clusters {
			if c.Name == cluster {
				n.inSpec = append(n.inSpec, id)
				if c.KubeConfig != nil && c.KubeConfig.SecretRef != nil {
					n.secret = c.KubeConfig.SecretRef.Name
				}
			}
		}
	}
	rec, err := h.recorded(ctx, list)
	if err != nil {
		return n, err
	}
	for id, clusters := range rec {
		if _, ok := clusters[cluster]; ok && !slices.Contains(n.inSpec, id) {
			n.inStatus = append(n.inStatus, id)
		}
	}
	slices.Sort(n.inStatus)
	return n, nil
}

// recorded is, by ClusterSet ("<namespace>/<name>"), every cluster its hub records:
// status.clusters, and the ClusterSetMembers, which have every member where status lists
// only plan.MaxStatusClusters of them (a hub without the kind has only status).
func (h *hub) recorded(ctx context.Context, list *straitv1.ClusterSetList) (map[string]map[string]straitv1.ClusterStatus, error) {
	out := map[string]map[string]straitv1.ClusterStatus{}
	for _, cs := range list.Items {
		id := cs.Namespace + "/" + cs.Name
		out[id] = map[string]straitv1.ClusterStatus{}
		for _, c := range cs.Status.Clusters {
			out[id][c.Name] = c
		}
	}
	members := &straitv1.ClusterSetMemberList{}
	if err := h.c.List(ctx, members); err != nil {
		if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return out, nil
		}
		// Without the right to list them, status alone is whole while no ClusterSet
		// has more clusters than it lists.
		complete := true
		for _, cs := range list.Items {
			complete = complete && len(cs.Status.Clusters) < plan.MaxStatusClusters
		}
		if apierrors.IsForbidden(err) && complete {
			return out, nil
		}
		return nil, fmt.Errorf("listing the hub's ClusterSetMembers (status.clusters lists only %d members of a ClusterSet): %w",
			plan.MaxStatusClusters, err)
	}
	for _, m := range members.Items {
		if byName, ok := out[m.Namespace+"/"+m.Spec.ClusterSet]; ok {
			byName[m.Spec.Cluster] = m.Status
		}
	}
	return out, nil
}

// waitPruned waits until no ClusterSet's status names the cluster: the hub has removed
// what it wrote there (docs/hub.md: a removed cluster stays in status, Pruning, until it
// is clean).
func (h *hub) waitPruned(ctx context.Context, cluster string, timeout time.Duration, progress func(string, ...any)) error {
	deadline := time.Now().Add(timeout)
	said := false
	for {
		n, err := h.naming(ctx, cluster)
		if err != nil {
			return err
		}
		if len(n.inSpec) > 0 {
			return fmt.Errorf("ClusterSet %s names %s in spec.clusters again", strings.Join(n.inSpec, ", "), cluster)
		}
		if len(n.inStatus) == 0 {
			return nil
		}
		if !said {
			progress("waiting for the hub to prune %s (ClusterSet %s still lists it in status)", cluster, strings.Join(n.inStatus, ", "))
			said = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the hub has not pruned %s within %s: ClusterSet %s still lists it in status.clusters (kubectl -n <ns> get clusterset -o yaml says why)", cluster, timeout, strings.Join(n.inStatus, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (h *hub) deleteSecret(ctx context.Context, namespace, name string) (bool, error) {
	err := h.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deleting Secret %s/%s in the hub: %w", namespace, name, err)
	}
	return true, nil
}

// knownMember is a cluster a ClusterSet in the hub has as a member (in spec.clusters, or
// in status alone while the hub prunes it), found by the kube-system UID the hub read
// there.
type knownMember struct {
	clusterSet, name string
	inSpec           bool
}

// memberOfUID returns the members the hub's ClusterSets record with the kube-system
// UID uid (kubeSystemUID in status.clusters and the ClusterSetMembers, which the hub
// writes when it connects).
func (h *hub) memberOfUID(ctx context.Context, uid string) ([]knownMember, error) {
	list := &straitv1.ClusterSetList{}
	if err := h.c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the hub's ClusterSets: %w", err)
	}
	rec, err := h.recorded(ctx, list)
	if err != nil {
		return nil, err
	}
	var out []knownMember
	for _, cs := range list.Items {
		id := cs.Namespace + "/" + cs.Name
		for _, c := range rec[id] {
			if c.KubeSystemUID != uid {
				continue
			}
			k := knownMember{clusterSet: id, name: c.Name}
			for _, s := range cs.Spec.Clusters {
				k.inSpec = k.inSpec || s.Name == c.Name
			}
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b knownMember) int { return strings.Compare(a.clusterSet+"/"+a.name, b.clusterSet+"/"+b.name) })
	return out, nil
}
