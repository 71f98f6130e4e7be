package diff

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/plan"
)

// objectDiff is one object in one cluster before and after; nil is absent.
type objectDiff struct {
	cluster string
	id      string // apiVersion/Kind/namespace/name
	live    map[string]any
	merged  map[string]any
}

// memberTarget is a cluster whose objects the diff looks at, and how to reach it.
type memberTarget struct {
	name       string
	kubeConfig *meta.KubeConfigReference
	// left: the cluster leaves the ClusterSet; the hub prunes all it wrote there.
	left bool
}

// connector makes clients of members: from a --member-kubeconfig file when one is
// given for the cluster, else from the kubeconfig Secret the ClusterSet names in the
// hub (what the hub itself uses), else, without a kubeConfig, the hub's own cluster.
type connector struct {
	hub       client.Client
	hubConfig *rest.Config
	namespace string            // the ClusterSet's, where its kubeconfig Secrets are
	files     map[string]string // cluster -> kubeconfig file
	scheme    *runtime.Scheme
}

func (c *connector) client(ctx context.Context, t memberTarget) (client.Client, error) {
	var cfg *rest.Config
	var err error
	switch {
	case c.files[t.name] != "":
		if cfg, err = clientcmd.BuildConfigFromFlags("", c.files[t.name]); err != nil {
			return nil, fmt.Errorf("--member-kubeconfig %s=%s: %w", t.name, c.files[t.name], err)
		}
	case t.kubeConfig != nil && t.kubeConfig.SecretRef != nil:
		if cfg, _, err = controllers.KubeConfigFromSecret(ctx, c.hub, c.namespace, t.kubeConfig.SecretRef); err != nil {
			return nil, fmt.Errorf("%w (or give --member-kubeconfig %s=FILE)", err, t.name)
		}
	case t.kubeConfig != nil && t.kubeConfig.ConfigMapRef != nil:
		return nil, fmt.Errorf("kubeConfig.configMapRef is not supported; use secretRef or --member-kubeconfig %s=FILE", t.name)
	default:
		cfg = rest.CopyConfig(c.hubConfig)
	}
	cfg.Timeout = requestTimeout
	cfg.UserAgent = userAgent
	return client.New(cfg, client.Options{Scheme: c.scheme})
}

// memberDiffs is what the hub would change in one member: the plan's objects dry-run
// applied as the hub applies them, the namespaces it would create, and what it would
// prune. With no objects (the cluster leaves) everything the hub wrote there goes.
func memberDiffs(ctx context.Context, mc client.Client, cluster string, cs types.NamespacedName, objs []client.Object) ([]objectDiff, error) {
	var out []objectDiff
	desired := map[string]bool{}
	if len(objs) > 0 {
		if err := controllers.CheckMembershipOwner(ctx, mc, cs); err != nil {
			return nil, fmt.Errorf("the hub would write nothing there: %w", err)
		}
	}
	missingNS, err := missingNamespaces(ctx, mc, objs)
	if err != nil {
		return nil, err
	}
	for _, ns := range missingNS.list {
		nsObj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name": ns, "labels": map[string]any{straitv1.LabelManagedBy: straitv1.ManagedByHub}}}
		out = append(out, objectDiff{cluster: cluster, id: objectID(&unstructured.Unstructured{Object: nsObj}), merged: nsObj})
	}
	for _, o := range objs {
		d, err := objectChange(ctx, mc, o, missingNS.set[o.GetNamespace()])
		if err != nil {
			return nil, err
		}
		d.cluster = cluster
		desired[d.id] = true
		out = append(out, d)
	}
	owned, err := controllers.ListOwned(ctx, mc, mc, cs)
	if err != nil {
		return nil, err
	}
	for _, o := range owned {
		u, err := ownedObject(mc.Scheme(), o)
		if err != nil {
			return nil, err
		}
		if id := objectID(u); !desired[id] {
			out = append(out, objectDiff{cluster: cluster, id: id, live: view(u.Object)})
		}
	}
	return out, nil
}

type namespaceSet struct {
	list []string
	set  map[string]bool
}

// missingNamespaces are the namespaces of objs the member lacks: the hub creates them.
func missingNamespaces(ctx context.Context, mc client.Client, objs []client.Object) (namespaceSet, error) {
	out := namespaceSet{set: map[string]bool{}}
	seen := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		switch err := mc.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); {
		case apierrors.IsNotFound(err):
			out.list = append(out.list, ns)
			out.set[ns] = true
		case err != nil:
			return out, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
	}
	sort.Strings(out.list)
	return out, nil
}

// objectChange is one desired object: live as the member holds it, merged as a dry run
// of the hub's apply (field manager strait-hub, forced) says it would become. In a
// namespace the hub would first create, the object is shown as the hub would send it.
func objectChange(ctx context.Context, mc client.Client, o client.Object, nsMissing bool) (objectDiff, error) {
	body, status, err := controllers.ApplyBody(o)
	if err != nil {
		return objectDiff{}, err
	}
	d := objectDiff{id: objectID(body)}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(body.GroupVersionKind())
	if !nsMissing {
		switch err := mc.Get(ctx, client.ObjectKeyFromObject(body), live); {
		case err == nil:
			d.live = view(live.Object)
		case !apierrors.IsNotFound(err):
			return d, fmt.Errorf("reading %s: %w", d.id, err)
		}
	}
	merged := body.DeepCopy()
	if !nsMissing {
		err := mc.Apply(ctx, client.ApplyConfigurationFromUnstructured(merged), client.DryRunAll,
			client.FieldOwner(straitv1.FieldManager), client.ForceOwnership)
		if err != nil {
			return d, fmt.Errorf("dry run of the hub's apply of %s: %w", d.id, err)
		}
	}
	if status != nil {
		// The hub applies a ServiceImport's status apart, and owns all of it; it keeps a
		// condition's lastTransitionTime while the condition's status stays.
		var held mcsv1.ServiceImport
		if d.live != nil {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &held)
		}
		controllers.StampConditions(status, held.Status.Conditions, time.Now())
		merged.Object["status"] = status
	}
	d.merged = view(merged.Object)
	return d, nil
}

// ownedObject is a listed object as the unstructured form the diff prints.
func ownedObject(scheme *runtime.Scheme, o controllers.OwnedObject) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(o.Object, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// withPSK fills the IPsec key the hub copies from its own Secret into the plan's
// member Secret, or leaves the Secret out, as the hub does, when it cannot be read.
func withPSK(ctx context.Context, hub client.Reader, p *plan.Plan, objs []client.Object) ([]client.Object, error) {
	src := p.IPsecPSKSource()
	if src == nil {
		return objs, nil
	}
	s := &corev1.Secret{}
	err := hub.Get(ctx, *src, s)
	if err == nil && len(s.Data[plan.IPsecPSKKey]) == 0 {
		err = fmt.Errorf("no key %q", plan.IPsecPSKKey)
	}
	out := objs[:0:0]
	for _, o := range objs {
		if ms, ok := o.(*corev1.Secret); ok && ms.Name == plan.IPsecPSKSecretName {
			if err != nil {
				continue
			}
			ms.Data = map[string][]byte{plan.IPsecPSKKey: s.Data[plan.IPsecPSKKey]}
		}
		out = append(out, o)
	}
	if err != nil {
		return out, fmt.Errorf("the IPsec PSK Secret %s: %w: the hub would neither write the members' copy nor prune", src, err)
	}
	return out, nil
}

// objectID names an object as the diff's headers do: apiVersion/Kind/namespace/name,
// or apiVersion/Kind/name for a cluster-scoped one.
func objectID(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetName()
	}
	return u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// view is an object as the diff shows it: without what the API server alone sets
// (managedFields, resourceVersion, generation, uid, creationTimestamp), without the
// status others write (a ServiceImport keeps its status, which the hub writes), and
// without the cluster IPs the member allocates.
func view(m map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(m)
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, k := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"} {
			delete(md, k)
		}
		// The digest of what the hub wrote changes with every change it sums up.
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, straitv1.AnnotationDigest)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if out["kind"] != "ServiceImport" {
		delete(out, "status")
	}
	// The clusterset IP is the member's: its API server allocates the derived Service's
	// cluster IP and strait dns copies it into the import's spec.ips. A dry run of a new
	// Service would show an address that is never allocated.
	if spec, ok := out["spec"].(map[string]any); ok {
		switch out["kind"] {
		case "Service":
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		case "ServiceImport":
			delete(spec, "ips")
		}
	}
	return out
}

// maskSecret hides a Secret's values as kubectl diff does: "***" where both sides hold
// the same value, "*** (before)" and "*** (after)" where it changes.
func maskSecret(d *objectDiff) {
	live, merged := secretData(d.live), secretData(d.merged)
	for k, v := range live {
		if mv, ok := merged[k]; ok && mv == v {
			live[k], merged[k] = "***", "***"
		} else {
			live[k] = "*** (before)"
		}
	}
	for k, v := range merged {
		if v != "***" {
			merged[k] = "*** (after)"
		}
	}
}

func secretData(m map[string]any) map[string]any {
	if m == nil || m["kind"] != "Secret" {
		return nil
	}
	data, _ := m["data"].(map[string]any)
	return data
}
