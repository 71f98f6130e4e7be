package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/straitnet/strait/lab/manifest"
)

// InstallFile is the name of the install manifest in bin/images, beside the images.
const InstallFile = "argocd-install.yaml"

// upstreamImages are the images install.yaml names, as prefixes (their tags follow the
// release): Argo CD's own program and Redis. Dex's goes with Dex.
const (
	upstreamArgoCD = "quay.io/argoproj/argocd:"
	upstreamRedis  = "public.ecr.aws/docker/library/redis:"
)

// RedisImage is the ref of the locally built Redis image of the release (Debian's
// redis-server; Argo CD uses Redis as a cache only).
func (r Release) RedisImage() string { return "strait-lab/argocd-redis:" + r.Version }

// leftOut tells the components of install.yaml the lab does not run, by the name their
// objects start with: Dex (single sign-on: the lab logs in as admin), the ApplicationSet
// controller and the notifications controller (the lab has one Application and no one to
// notify). Their ClusterRoles, Services, ConfigMaps and NetworkPolicies go with them.
func leftOut(name string) bool {
	for _, p := range []string{"argocd-dex-server", "argocd-applicationset-controller", "argocd-notifications-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// clusterScoped tells the kinds of install.yaml that take no namespace.
func clusterScoped(kind string) bool {
	return kind == "CustomResourceDefinition" || kind == "ClusterRole" || kind == "ClusterRoleBinding"
}

// Objects are the objects that install the release into Namespace: install.yaml of the
// module's manifests/ less the components in leftOut, with these changes, the lab's only
// ones:
//   - every container runs the image built here (Image, RedisImage) and pulls it only
//     when the node lacks it (install.yaml says Always, which asks the registry first);
//   - argocd-server serves plain HTTP (server.insecure in argocd-cmd-params-cm, as behind
//     a TLS-terminating ingress): the lab's git server calls its /api/webhook on a push;
//   - every readiness probe looks every ReadinessPeriod seconds, as the lab's Flux
//     controllers' do (install.yaml: 10 s, argocd-server's 30 s, so that lab up waited
//     some 30 s for an argocd-server that answered).
//
// Namespaced objects get Namespace, as `kubectl apply -n argocd -f install.yaml` gives them.
func (r Release) Objects() ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(r.Source, "manifests", "install.yaml"))
	if err != nil {
		return nil, fmt.Errorf("argocd %s install: %w", r.Version, err)
	}
	objs, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("argocd %s install.yaml: %w", r.Version, err)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if leftOut(o.GetName()) {
			continue
		}
		if !clusterScoped(o.GetKind()) {
			o.SetNamespace(Namespace)
		}
		if err := r.localImages(o); err != nil {
			return nil, fmt.Errorf("argocd %s install: %s %s: %w", r.Version, o.GetKind(), o.GetName(), err)
		}
		if err := quickReadiness(o); err != nil {
			return nil, fmt.Errorf("argocd %s install: %s %s: %w", r.Version, o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "ConfigMap" && o.GetName() == "argocd-cmd-params-cm" {
			if err := unstructured.SetNestedField(o.Object, "true", "data", "server.insecure"); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// ReadinessPeriod is how often, in seconds, the lab's Argo CD pods are probed for
// readiness.
const ReadinessPeriod = 2

// quickReadiness makes the readiness probe of every container of a workload look every
// ReadinessPeriod seconds.
func quickReadiness(o *unstructured.Unstructured) error {
	if o.GetKind() != "Deployment" && o.GetKind() != "StatefulSet" {
		return nil
	}
	path := []string{"spec", "template", "spec", "containers"}
	containers, _, err := unstructured.NestedSlice(o.Object, path...)
	if err != nil {
		return err
	}
	for _, c := range containers {
		if probe, ok := c.(map[string]any)["readinessProbe"].(map[string]any); ok {
			probe["periodSeconds"] = int64(ReadinessPeriod)
		}
	}
	return unstructured.SetNestedSlice(o.Object, containers, path...)
}

// localImages points every container of a workload at the images built here.
func (r Release) localImages(o *unstructured.Unstructured) error {
	if o.GetKind() != "Deployment" && o.GetKind() != "StatefulSet" {
		return nil
	}
	for _, field := range []string{"initContainers", "containers"} {
		path := []string{"spec", "template", "spec", field}
		containers, _, err := unstructured.NestedSlice(o.Object, path...)
		if err != nil {
			return err
		}
		for i, c := range containers {
			m, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("%s[%d]: not an object", field, i)
			}
			img, _ := m["image"].(string)
			switch {
			case strings.HasPrefix(img, upstreamArgoCD):
				m["image"] = r.Image()
			case strings.HasPrefix(img, upstreamRedis):
				m["image"] = r.RedisImage()
			default:
				return fmt.Errorf("%s %v: image %q is none the lab builds (%s*, %s*)", field, m["name"], img, upstreamArgoCD, upstreamRedis)
			}
			m["imagePullPolicy"] = "IfNotPresent"
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, path...); err != nil {
			return err
		}
	}
	return nil
}
