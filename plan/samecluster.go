package plan

import (
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// One cluster, registered once: a cluster's name is its cluster ID, so two entries that
// are the same cluster would give it two IDs, two Memberships fighting over one object,
// and routes to itself. Validate refuses what the spec alone shows (sameKubeConfigs);
// Compute refuses what only a connection shows (sameClusters).

// DefaultKubeConfigKey is the key of a kubeconfig Secret that kubeConfig.secretRef
// reads when it names none (Flux's meta.KubeConfigReference default; the hub falls back
// to "value.yaml" when the Secret has no "value").
const DefaultKubeConfigKey = "value"

// sameKubeConfigs refuses two clusters that name the same kubeconfig, the same Secret
// and key (the Secret is in the ClusterSet's namespace, so the name is the whole
// reference): the hub would reach one cluster under two names, and each name would
// claim it. A key left out is DefaultKubeConfigKey: if the Secret has it, both read the
// same kubeconfig; if not, the entry naming it explicitly is broken anyway. What only a
// connection shows (two kubeconfigs reaching one API server) is sameClusters'.
func sameKubeConfigs(clusters []straitv1.ClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	first := map[meta.SecretKeyReference]int{}
	for i := range clusters {
		kc := clusters[i].KubeConfig
		if kc == nil || kc.SecretRef == nil || kc.SecretRef.Name == "" {
			continue
		}
		ref := meta.SecretKeyReference{Name: kc.SecretRef.Name, Key: kc.SecretRef.Key}
		if ref.Key == "" {
			ref.Key = DefaultKubeConfigKey
		}
		j, seen := first[ref]
		if !seen {
			first[ref] = i
			continue
		}
		errs = append(errs, field.Invalid(path.Index(i).Child("kubeConfig", "secretRef"), kc.SecretRef.Name, fmt.Sprintf(
			"%s (%s) and %s (%s) name the same kubeconfig, Secret %s key %s: one cluster registered twice; "+
				"give %s the kubeconfig Secret of its own cluster, or remove one of the entries",
			path.Index(j), clusters[j].Name, path.Index(i), clusters[i].Name, ref.Name, ref.Key, clusters[i].Name)))
	}
	return errs
}

// sameClusters refuses two clusters whose kubeconfigs reach the same API server, as
// the UIDs of their kube-system namespaces observed by the hub tell: a namespace's UID
// is given once by the cluster's API server and is the same through every address,
// user and kubeconfig that reaches it (what the MCS API's cluster ID defaults to). A
// cluster whose UID was not observed is not compared.
func sameClusters(clusters []straitv1.ClusterSpec, observed Observed) field.ErrorList {
	path := field.NewPath("spec", "clusters")
	var errs field.ErrorList
	first := map[types.UID]int{}
	for i := range clusters {
		f := observed[clusters[i].Name]
		if f == nil || f.KubeSystemUID == "" {
			continue
		}
		j, seen := first[f.KubeSystemUID]
		if !seen {
			first[f.KubeSystemUID] = i
			continue
		}
		p := path.Index(i)
		if clusters[i].KubeConfig != nil {
			p = p.Child("kubeConfig")
		}
		errs = append(errs, field.Invalid(p, describeKubeConfig(clusters[i].KubeConfig), fmt.Sprintf(
			"%s (%s, %s) and %s (%s, %s) reach the same cluster: the kube-system namespace of both has UID %s; "+
				"one cluster registered twice: remove one of the entries, or give %s the kubeconfig of the cluster it is meant to be",
			path.Index(j), clusters[j].Name, describeKubeConfig(clusters[j].KubeConfig),
			path.Index(i), clusters[i].Name, describeKubeConfig(clusters[i].KubeConfig), f.KubeSystemUID, clusters[i].Name)))
	}
	return errs
}

// describeKubeConfig is a cluster's kubeConfig as an error's value.
func describeKubeConfig(kc *meta.KubeConfigReference) string {
	if kc == nil || kc.SecretRef == nil {
		return "the hub's own cluster"
	}
	key := kc.SecretRef.Key
	if key == "" {
		key = DefaultKubeConfigKey
	}
	return "Secret " + kc.SecretRef.Name + " key " + key
}
