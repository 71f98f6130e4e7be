package flux

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// SyncName names the GitRepository and the Kustomization that sync a clusterset repo to
// the hub, as in examples/clusterset/flux.
const SyncName = "clusterset"

// Sync is how Flux syncs a clusterset repo to the hub: a GitRepository on the repo's
// branch and a Kustomization of one directory of it that waits for what it applied (the
// ClusterSet) to be Ready, through kstatus.
type Sync struct {
	// URL is the repository's clone URL as source-controller reaches it.
	URL    string
	Branch string
	// Path is the directory of the repo the Kustomization applies, like "./clusterset".
	Path string
	// TargetNamespace is where the applied objects go (strait-system).
	TargetNamespace string
	// GitInterval is how often source-controller polls the repo; Interval how often the
	// Kustomization is applied again without a new commit, RetryInterval after a failure;
	// Timeout bounds the apply and the health checks.
	GitInterval, Interval, RetryInterval, Timeout time.Duration
	// DecryptionSecret, when set, names the Secret in Namespace whose age identity
	// (key age.agekey) decrypts SOPS-encrypted files of the repo while they are applied:
	// the Kustomization's spec.decryption.
	DecryptionSecret string
}

// Objects are the GitRepository and the Kustomization, both in Namespace.
func (s Sync) Objects() ([]*unstructured.Unstructured, error) {
	for what, d := range map[string]time.Duration{"git interval": s.GitInterval, "interval": s.Interval,
		"retry interval": s.RetryInterval, "timeout": s.Timeout} {
		if d <= 0 {
			return nil, fmt.Errorf("flux sync of %s: %s %s: must be positive", s.URL, what, d)
		}
	}
	if s.URL == "" || s.Branch == "" || s.Path == "" || s.TargetNamespace == "" {
		return nil, fmt.Errorf("flux sync %+v: url, branch, path and target namespace must all be set", s)
	}
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": SyncName, "namespace": Namespace},
		"spec": map[string]any{
			"interval": s.GitInterval.String(), "url": s.URL,
			"ref": map[string]any{"branch": s.Branch},
		},
	}}
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": SyncName, "namespace": Namespace},
		"spec": map[string]any{
			"interval": s.Interval.String(), "retryInterval": s.RetryInterval.String(),
			"prune": true, "wait": true, "timeout": s.Timeout.String(),
			"sourceRef":       map[string]any{"kind": "GitRepository", "name": SyncName},
			"path":            s.Path,
			"targetNamespace": s.TargetNamespace,
		},
	}}
	if s.DecryptionSecret != "" {
		ks.Object["spec"].(map[string]any)["decryption"] = map[string]any{
			"provider": "sops", "secretRef": map[string]any{"name": s.DecryptionSecret}}
	}
	return []*unstructured.Unstructured{repo, ks}, nil
}

// SyncFiles are the Flux wiring as a clusterset repo keeps it in its flux/ directory:
// gitrepository.yaml, sync.yaml (the Kustomization) and the kustomization.yaml listing
// them, which `kubectl apply -k flux/` applies once to start syncing.
func (s Sync) SyncFiles() (map[string][]byte, error) {
	objs, err := s.Objects()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gitrepository.yaml\n  - sync.yaml\n"),
	}
	for name, o := range map[string]*unstructured.Unstructured{"gitrepository.yaml": objs[0], "sync.yaml": objs[1]} {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// Revision is how Flux writes a commit of branch in its statuses (lastAppliedRevision).
func Revision(branch, commit string) string { return branch + "@sha1:" + commit }
