package flux

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// Objects are the objects that install the release into Namespace, in kustomize's apply
// order (Namespace, CRDs, ServiceAccounts, RBAC, Service, Deployments): each controller's
// CRDs, RBAC and Deployment from its config/ manifests, its ServiceAccount, and
// source-controller's Service (port 80 to its artifact server on 9090, which
// kustomize-controller fetches from), with every Deployment's image set to Image.
func (r Release) Objects() ([]*unstructured.Unstructured, error) {
	fsys := filesys.MakeFsInMemory()
	top := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Namespace: Namespace,
		Resources: []string{"namespace.yaml"},
		Labels: []types.Label{{Pairs: map[string]string{
			"app.kubernetes.io/instance": Namespace,
			"app.kubernetes.io/part-of":  "flux",
			"app.kubernetes.io/version":  r.Version,
		}}},
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}
	if err := writeYAML(fsys, "namespace.yaml", ns); err != nil {
		return nil, err
	}
	for _, c := range Controllers() {
		src, ok := r.Sources[c]
		if !ok {
			return nil, fmt.Errorf("flux %s: no source directory of %s", r.Version, c)
		}
		if err := r.controllerOverlay(fsys, c, src); err != nil {
			return nil, err
		}
		top.Resources = append(top.Resources, c)
		// Flux's manifests name the image fluxcd/<controller>.
		top.Images = append(top.Images, types.Image{Name: "fluxcd/" + c, NewName: imageName(c), NewTag: r.Version})
	}
	if err := writeYAML(fsys, "kustomization.yaml", top); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	// What an apply needs first comes first: Namespace, CRDs, ServiceAccounts, RBAC.
	opts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(opts).Run(fsys, "/")
	if err != nil {
		return nil, fmt.Errorf("flux %s install: %w", r.Version, err)
	}
	var objs []*unstructured.Unstructured
	for _, res := range m.Resources() {
		// Through JSON: unstructured holds int64 where kustomize's maps hold int.
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("flux %s install: %s: %w", r.Version, res.CurId(), err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("flux %s install: %s: %w", r.Version, res.CurId(), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// controllerOverlay copies controller's config/ parts from its module source into fsys
// under /<controller>/config and puts a kustomization over them that runs it under its
// own ServiceAccount, as `flux install` does: Flux's RBAC binds the ServiceAccount
// "default" of a placeholder namespace.
func (r Release) controllerOverlay(fsys filesys.FileSystem, controller, src string) error {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"serviceaccount.yaml"},
		Labels:    []types.Label{{Pairs: map[string]string{"app.kubernetes.io/component": controller}}},
	}
	// The parts of config/ that `flux install` takes: config/default also names a
	// namespace of its own and, for kustomize-controller, source-controller's release
	// assets by URL.
	for _, d := range []string{"crd", "rbac", "manager"} {
		from := filepath.Join(src, "config", d)
		if err := copyTree(fsys, from, path.Join("/", controller, "config", d)); err != nil {
			return fmt.Errorf("flux %s %s: %w", r.Version, controller, err)
		}
		k.Resources = append(k.Resources, "config/"+d)
	}
	subjects, err := jsonPatch("replace", "/subjects", []map[string]string{{"kind": "ServiceAccount", "name": controller, "namespace": Namespace}})
	if err != nil {
		return err
	}
	account, err := jsonPatch("add", "/spec/template/spec/serviceAccountName", controller)
	if err != nil {
		return err
	}
	// The one way the lab's install differs from `flux install` beyond the
	// ServiceAccounts: the readiness probe every 2 s, not the default 10, so that the
	// controllers are Ready within 2 s of answering (lab up waits for them).
	readiness, err := jsonPatch("add", "/spec/template/spec/containers/0/readinessProbe/periodSeconds", 2)
	if err != nil {
		return err
	}
	rbac := func(kind string) *types.Selector {
		return &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Group: "rbac.authorization.k8s.io", Kind: kind}}}
	}
	k.Patches = []types.Patch{
		{Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Group: "apps", Kind: "Deployment"}, Name: controller}}, Patch: account},
		{Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Group: "apps", Kind: "Deployment"}, Name: controller}}, Patch: readiness},
		{Target: rbac("RoleBinding"), Patch: subjects},
		{Target: rbac("ClusterRoleBinding"), Patch: subjects},
	}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": controller}}
	if err := writeYAML(fsys, path.Join(controller, "serviceaccount.yaml"), sa); err != nil {
		return err
	}
	return writeYAML(fsys, path.Join(controller, "kustomization.yaml"), k)
}

func jsonPatch(op, at string, value any) (string, error) {
	b, err := json.Marshal([]map[string]any{{"op": op, "path": at, "value": value}})
	return string(b), err
}

func writeYAML(fsys filesys.FileSystem, name string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return fsys.WriteFile(path.Join("/", name), b)
}

// copyTree copies the regular files under the directory from (on disk) to to (in fsys).
func copyTree(fsys filesys.FileSystem, from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(path.Join(to, filepath.ToSlash(rel)), data)
	})
}

// InstallFile is where `make flux-images` writes the release's install manifest (the
// Objects as one YAML stream, as `flux install --export` prints them), next to the
// images: the lab applies it to the hub with kubectl.
const InstallFile = "flux-install.yaml"
