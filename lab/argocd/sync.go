package argocd

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// AppName names the Application that syncs a clusterset repo to the hub, as in
// examples/clusterset/argocd.
const AppName = "clusterset"

// Sync is how Argo CD syncs a clusterset repo to the hub: the Application of
// examples/clusterset/argocd/application.yaml, as a user installs it, on the lab's repo.
type Sync struct {
	// URL is the repository's clone URL as the repo-server reaches it.
	URL    string
	Branch string
	// Path is the directory of the repo the Application applies, like "clusterset".
	Path string
	// TargetNamespace is where the applied objects go (strait-system).
	TargetNamespace string
}

// Application is the example Application (application.yaml) with the sync's repo,
// revision, path and namespace, in Namespace: its sync policy and options are the
// example's, so that the lab runs what users copy.
func (s Sync) Application(example []byte) (*unstructured.Unstructured, error) {
	if s.URL == "" || s.Branch == "" || s.Path == "" || s.TargetNamespace == "" {
		return nil, fmt.Errorf("argo cd sync %+v: url, branch, path and target namespace must all be set", s)
	}
	app := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(example, &app.Object); err != nil {
		return nil, fmt.Errorf("the example Application: %w", err)
	}
	if app.GetKind() != "Application" || app.GetName() != AppName {
		return nil, fmt.Errorf("the example Application: a %s named %q, want an Application named %s", app.GetKind(), app.GetName(), AppName)
	}
	app.SetNamespace(Namespace)
	for _, f := range []struct {
		value string
		path  []string
	}{
		{s.URL, []string{"spec", "source", "repoURL"}},
		{s.Branch, []string{"spec", "source", "targetRevision"}},
		{s.Path, []string{"spec", "source", "path"}},
		{s.TargetNamespace, []string{"spec", "destination", "namespace"}},
	} {
		if err := unstructured.SetNestedField(app.Object, f.value, f.path...); err != nil {
			return nil, fmt.Errorf("the example Application: %w", err)
		}
	}
	return app, nil
}

// WithSettings merges the data of a ConfigMap argocd-cm (examples/clusterset/argocd's
// argocd-cm.yaml: the ClusterSet's health check), as a user merges it into their Argo CD's,
// into the install's argocd-cm. A key the install sets already is refused rather than
// overwritten.
func WithSettings(objs []*unstructured.Unstructured, argocdCM []byte) error {
	var patch struct {
		Metadata struct{ Name string }
		Data     map[string]string
	}
	if err := yaml.Unmarshal(argocdCM, &patch); err != nil {
		return fmt.Errorf("argocd-cm settings: %w", err)
	}
	if patch.Metadata.Name != "argocd-cm" || len(patch.Data) == 0 {
		return fmt.Errorf("argocd-cm settings: a ConfigMap named %q with %d keys, want argocd-cm with data", patch.Metadata.Name, len(patch.Data))
	}
	return changeArgoCDCM(objs, func(data map[string]string) error {
		for k, v := range patch.Data {
			if _, ok := data[k]; ok {
				return fmt.Errorf("argocd-cm settings: %s is set by the install already", k)
			}
			data[k] = v
		}
		return nil
	})
}

// changeArgoCDCM changes the data of the install's ConfigMap argocd-cm.
func changeArgoCDCM(objs []*unstructured.Unstructured, change func(data map[string]string) error) error {
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != "argocd-cm" {
			continue
		}
		data, _, err := unstructured.NestedStringMap(o.Object, "data")
		if err != nil {
			return err
		}
		if data == nil {
			data = map[string]string{}
		}
		if err := change(data); err != nil {
			return err
		}
		return unstructured.SetNestedStringMap(o.Object, data, "data")
	}
	return fmt.Errorf("argocd-cm: the install has no ConfigMap argocd-cm")
}

// WithResync sets how often the application controller compares every Application with
// git and the cluster again, by argocd-cm's timeout.reconciliation (180 s by default,
// with up to 60 s of jitter, which goes): a lab's tests see several resyncs pass.
func WithResync(objs []*unstructured.Unstructured, every time.Duration) error {
	return changeArgoCDCM(objs, func(data map[string]string) error {
		data["timeout.reconciliation"] = every.String()
		data["timeout.reconciliation.jitter"] = "0s"
		return nil
	})
}
