package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// defaultFieldManager applies a ClusterSet the hub does not hold yet, or one that no
// server-side apply wrote.
const defaultFieldManager = "strait-diff"

// refusedError is the hub's API server refusing the ClusterSet: its schema or the webhook.
type refusedError struct {
	name string
	err  *apierrors.StatusError
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("the hub refuses ClusterSet %s: %s", e.name, e.err.ErrStatus.Message)
}

// lines is the refusal one field error a line when the API server names the fields,
// else its message.
func (e *refusedError) lines() []string {
	var out []string
	if d := e.err.ErrStatus.Details; d != nil {
		for _, c := range d.Causes {
			if c.Field != "" {
				out = append(out, c.Field+": "+c.Message)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, e.err.ErrStatus.Message)
	}
	return out
}

// decodeClusterSet reads a ClusterSet manifest into the unstructured object sent to
// the hub, its namespace defaulted.
func decodeClusterSet(name string, data []byte, namespace string) (*unstructured.Unstructured, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	gvk := u.GroupVersionKind()
	if gvk.Kind != straitv1.ClusterSetKind || gvk.GroupVersion() != straitv1.GroupVersion {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want apiVersion %s, kind %s (one ClusterSet per file)",
			name, u.GetAPIVersion(), u.GetKind(), straitv1.GroupVersion, straitv1.ClusterSetKind)
	}
	if u.GetName() == "" {
		return nil, fmt.Errorf("%s: metadata.name: Required value", name)
	}
	switch {
	case namespace != "" && u.GetNamespace() != "" && u.GetNamespace() != namespace:
		return nil, fmt.Errorf("%s: metadata.namespace %q differs from --namespace %q", name, u.GetNamespace(), namespace)
	case u.GetNamespace() == "" && namespace != "":
		u.SetNamespace(namespace)
	case u.GetNamespace() == "":
		u.SetNamespace(straitv1.SystemNamespace)
	}
	return u, nil
}

// dryRunClusterSet sends the ClusterSet to the hub as a server-side dry run, so the CRD's
// schema, its defaults and the webhook all answer, and returns what the hub would store
// and what it holds now (nil when it holds none).
//
// A live ClusterSet written by server-side apply is applied as the field manager that
// owns its spec (Flux's kustomize-controller, Argo CD, kubectl --server-side), so that a
// field the file drops is dropped, as the next sync will drop it; manager overrides
// that. A live ClusterSet no apply wrote (kubectl create, replace, client-side apply)
// gets the file's spec in place of its own, as a replace would.
func dryRunClusterSet(ctx context.Context, hub client.Client, file *unstructured.Unstructured, manager string) (after, live *unstructured.Unstructured, err error) {
	live = &unstructured.Unstructured{}
	live.SetGroupVersionKind(file.GroupVersionKind())
	switch err := hub.Get(ctx, client.ObjectKeyFromObject(file), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading ClusterSet %s/%s from the hub: %w", file.GetNamespace(), file.GetName(), err)
	}
	if manager == "" && live != nil {
		manager = specApplyManager(live)
	}
	after = file.DeepCopy()
	if live != nil && manager == "" {
		after = live.DeepCopy()
		after.Object["spec"] = file.Object["spec"]
		err = hub.Update(ctx, after, client.DryRunAll, client.FieldOwner(defaultFieldManager))
	} else {
		if manager == "" {
			manager = defaultFieldManager
		}
		err = hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(after), client.DryRunAll, client.FieldOwner(manager), client.ForceOwnership)
	}
	var status *apierrors.StatusError
	if errors.As(err, &status) && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)) {
		return nil, live, &refusedError{name: file.GetNamespace() + "/" + file.GetName(), err: status}
	}
	if err != nil {
		return nil, live, fmt.Errorf("dry run of ClusterSet %s/%s on the hub: %w", file.GetNamespace(), file.GetName(), err)
	}
	return after, live, nil
}

// specApplyManager is the field manager whose server-side apply owns the object's spec,
// "" when none does.
func specApplyManager(u *unstructured.Unstructured) string {
	for _, mf := range u.GetManagedFields() {
		if mf.Operation != "Apply" || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		if strings.Contains(mf.FieldsV1.GetRawString(), `"f:spec"`) {
			return mf.Manager
		}
	}
	return ""
}

// clusterSetView is what the diff of the hub's ClusterSet shows: identity and spec.
func clusterSetView(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	return map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
		"metadata":   map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
		"spec":       u.Object["spec"],
	}
}

// typedClusterSet converts the dry run's result into the type plan reads.
func typedClusterSet(u *unstructured.Unstructured) (*straitv1.ClusterSet, error) {
	cs := &straitv1.ClusterSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cs); err != nil {
		return nil, fmt.Errorf("decoding the ClusterSet the hub would store: %w", err)
	}
	return cs, nil
}
