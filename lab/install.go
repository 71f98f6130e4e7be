package lab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
)

// The images of Strait the lab's nodes run: what `make image` writes into the image
// directory, and the tag the lab's install overrides the manifests' images to.
const (
	StraitdImage = "strait/straitd:dev"
	CharonImage  = "strait/charon:dev"
)

// The names the install documentation gives (docs/hub.md).
const (
	hubAccessTokenSecret = "strait-hub-access-token"
	kubeconfigKey        = "value"
)

// installOverlay is the kustomization the lab applies to a cluster, as a user keeps one
// beside Strait's: the base (kustomize/hub or kustomize/member) with the images set to
// the locally built tag, and on members charon's --libipsec, since the lab's kernels have
// no ESP (docs/cable-drivers.md tells users of such kernels to add it the same way).
// A lab with monitoring adds the monitoring component (its relative path, or "") as
// docs/install.md tells users to; a lab with a gateway Lease timing (nil: the
// defaults) adds its flags to the agent as docs/agent.md tells users of a stall-prone
// API server to.
func installOverlay(base string, member bool, monitoring string, lease *topology.GatewayLease) ([]byte, error) {
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{base},
		"images": []map[string]string{
			{"name": ImageName(StraitdImage), "newTag": imageTag(StraitdImage)},
			{"name": ImageName(CharonImage), "newTag": imageTag(CharonImage)},
		},
	}
	if monitoring != "" {
		k["components"] = []string{monitoring}
	}
	if member {
		patch := `- op: test
  path: /spec/template/spec/containers/1/name
  value: charon
- op: add
  path: /spec/template/spec/containers/1/args/-
  value: --libipsec`
		if lease != nil {
			patch += `
- op: test
  path: /spec/template/spec/containers/0/name
  value: agent`
			for _, a := range lease.Args() {
				patch += `
- op: add
  path: /spec/template/spec/containers/0/args/-
  value: ` + a
			}
		}
		k["patches"] = []map[string]any{{
			"target": map[string]string{"kind": "DaemonSet", "name": "strait-agent"},
			"patch":  patch,
		}}
	}
	return yaml.Marshal(k)
}

// ImageName is an image reference without its tag ("strait/straitd" of StraitdImage),
// as kustomize's images: entries name it.
func ImageName(ref string) string { n, _, _ := strings.Cut(ref, ":"); return n }
func imageTag(ref string) string  { _, t, _ := strings.Cut(ref, ":"); return t }

// installStrait installs Strait into a cluster the way a user does: `kubectl apply
// --server-side -k` of the lab's overlay (writeInstallOverlay).
func (l *Lab) installStrait(ctx context.Context, cluster string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := l.Kubectl(ctx, cluster, "apply", "--server-side", "-k", l.InstallDir(cluster))
	return err
}

// writeInstallOverlay writes the lab's overlay for a cluster into its InstallDir: the
// base kustomize/hub or kustomize/member with the lab's images and patches.
func (l *Lab) writeInstallOverlay(cluster string, member, monitoring bool, lease *topology.GatewayLease) error {
	base := "hub"
	if member {
		base = "member"
	}
	dir := l.InstallDir(cluster)
	// kustomize takes a base only by a path relative to the overlay.
	rel, err := filepath.Rel(dir, filepath.Join(l.opts.Kustomize, base))
	if err != nil {
		return err
	}
	var component string
	if monitoring {
		if component, err = filepath.Rel(dir, filepath.Join(l.opts.Kustomize, "components", "monitoring", base)); err != nil {
			return err
		}
	}
	overlay, err := installOverlay(rel, member, component, lease)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), overlay, 0o644)
}

// InstallDir is the overlay the lab installs Strait into a cluster from (kubectl
// apply -k): what a user's `kubectl delete -k` would name to uninstall it.
func (l *Lab) InstallDir(cluster string) string {
	return filepath.Join(l.state.ClusterDir(cluster), "install")
}

// Kubectl runs kubectl against a cluster through its loopback forwarder, as a person at
// this machine would, and returns its standard output; the error carries its output.
func (l *Lab) Kubectl(ctx context.Context, cluster string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, l.opts.bin("kubectl"), append([]string{"--kubeconfig", l.state.KubeconfigPath(cluster)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s on %s: %w\n%s%s", strings.Join(args, " "), cluster, err, out, stderr.String())
	}
	return out, nil
}

// memberKubeconfig is the kubeconfig the hub uses for a member, made as docs/hub.md
// tells users: the member's strait-hub-access token (its long-lived token Secret, which
// the member's token controller fills), the member's CA, and the member's API server
// at its LAN address, where the hub's pods reach it.
func (l *Lab) memberKubeconfig(ctx context.Context, m topology.Cluster, timeout time.Duration) ([]byte, error) {
	cluster := m.Name
	lan, err := clientcmd.LoadFromFile(l.state.LANKubeconfig(cluster))
	if err != nil {
		return nil, err
	}
	client, err := l.clientset(m.ControlPlane)
	if err != nil {
		return nil, err
	}
	token, err := waitToken(ctx, client, straitv1.SystemNamespace, hubAccessTokenSecret, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cluster, err)
	}
	kc, err := tokenKubeconfig(lan, cluster, "strait-hub-access", straitv1.SystemNamespace, token)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", cluster, l.state.LANKubeconfig(cluster), err)
	}
	return clientcmd.Write(*kc)
}

// hubSecrets creates in the hub what a user creates out of band before the ClusterSet
// syncs: a kubeconfig Secret per member the ClusterSet names, and, for the ipsec cable,
// the pre-shared key (random, like `openssl rand -base64 32`).
func (l *Lab) hubSecrets(ctx context.Context, t *topology.Lab, hub kubernetes.Interface, clusterSet []byte, timeout time.Duration) error {
	var cs straitv1.ClusterSet
	if err := yaml.Unmarshal(clusterSet, &cs); err != nil {
		return fmt.Errorf("the lab's ClusterSet: %w", err)
	}
	ns := cs.Namespace
	if ns == "" {
		ns = straitv1.SystemNamespace
	}
	var errs []error
	for _, c := range cs.Spec.Clusters {
		if c.KubeConfig == nil {
			continue
		}
		m, ok := t.Cluster(c.Name)
		if !ok {
			continue
		}
		kc, err := l.memberKubeconfig(ctx, *m, timeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := c.KubeConfig.SecretRef.Key
		if key == "" {
			key = kubeconfigKey
		}
		errs = append(errs, createSecret(ctx, hub, ns, c.KubeConfig.SecretRef.Name, map[string][]byte{key: kc}, true))
	}
	if cs.Spec.Cable.Driver == straitv1.CableIPsec && cs.Spec.Cable.PSKSecretRef != nil {
		psk := make([]byte, 32)
		if _, err := rand.Read(psk); err != nil {
			return err
		}
		errs = append(errs, createSecret(ctx, hub, ns, cs.Spec.Cable.PSKSecretRef.Name,
			map[string][]byte{plan.IPsecPSKKey: []byte(base64.StdEncoding.EncodeToString(psk))}, false))
	}
	return errors.Join(errs...)
}

// createSecret creates an Opaque Secret. One that exists is left alone (the PSK: lab up
// again must not rotate it), or with replace given its data (a member's kubeconfig: a
// reinstalled member has a new token).
func createSecret(ctx context.Context, c kubernetes.Interface, ns, name string, data map[string][]byte, replace bool) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeOpaque, Data: data}
	_, err := c.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) && replace {
		_, err = c.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing secret %s/%s: %w", ns, name, err)
	}
	return nil
}

// rollout is one Deployment, StatefulSet or DaemonSet and how far its rollout is.
type rollout struct {
	Kind, Name             string
	Desired, Ready, Update int32
}

func (w rollout) done() bool { return w.Desired > 0 && w.Ready == w.Desired && w.Update == w.Desired }

func (w rollout) String() string {
	return fmt.Sprintf("%s/%s %d/%d ready, %d up to date", w.Kind, w.Name, w.Ready, w.Desired, w.Update)
}

// replicated is the rollout of a Deployment or StatefulSet: its replicas (1 when unset),
// the ready ones counted only once its controller observed its generation.
func replicated(kind string, meta metav1.ObjectMeta, replicas *int32, observed int64, ready, updated int32) rollout {
	want := int32(1)
	if replicas != nil {
		want = *replicas
	}
	if observed < meta.Generation {
		ready = 0
	}
	return rollout{Kind: kind, Name: meta.Name, Desired: want, Ready: ready, Update: updated}
}

// workloads lists the Deployments, StatefulSets (Argo CD's application controller) and
// DaemonSets of a namespace.
func workloads(ctx context.Context, c kubernetes.Interface, ns string) ([]rollout, error) {
	var out []rollout
	deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		out = append(out, replicated("Deployment", d.ObjectMeta, d.Spec.Replicas, d.Status.ObservedGeneration, d.Status.ReadyReplicas, d.Status.UpdatedReplicas))
	}
	sts, err := c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range sts.Items {
		out = append(out, replicated("StatefulSet", s.ObjectMeta, s.Spec.Replicas, s.Status.ObservedGeneration, s.Status.ReadyReplicas, s.Status.UpdatedReplicas))
	}
	dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, d := range dss.Items {
		ready := d.Status.NumberReady
		if d.Status.ObservedGeneration < d.Generation {
			ready = 0
		}
		out = append(out, rollout{Kind: "DaemonSet", Name: d.Name, Desired: d.Status.DesiredNumberScheduled, Ready: ready, Update: d.Status.UpdatedNumberScheduled})
	}
	return out, nil
}

// unservedServices names the Services of a namespace that select pods but have no ready
// endpoint yet. A Deployment is ready a moment before its Service's EndpointSlice says
// so, and the API server cannot call a webhook in that moment: Flux's first apply of the
// ClusterSet would fail on "no endpoints available".
func unservedServices(ctx context.Context, c kubernetes.Interface, ns string) ([]string, error) {
	svcs, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	slices, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				served[s.Labels[discoveryv1.LabelServiceName]] = true
			}
		}
	}
	var out []string
	for _, s := range svcs.Items {
		if len(s.Spec.Selector) > 0 && !served[s.Name] {
			out = append(out, "Service/"+s.Name+" has no ready endpoint")
		}
	}
	return out, nil
}

// waitStrait waits until every Deployment and DaemonSet of Strait's in a cluster is
// rolled out and ready; on timeout it names the ones that are not.
func (l *Lab) waitStrait(ctx context.Context, cluster string, c kubernetes.Interface, timeout time.Duration) error {
	return l.waitWorkloads(ctx, cluster, straitv1.SystemNamespace, c, timeout)
}

// waitWorkloads waits until every Deployment and DaemonSet of a namespace is rolled out
// and ready, and every Service of it has a ready endpoint.
func (l *Lab) waitWorkloads(ctx context.Context, cluster, ns string, c kubernetes.Interface, timeout time.Duration) error {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ws, err := workloads(ctx, c, ns)
		var pending []string
		for _, w := range ws {
			if !w.done() {
				pending = append(pending, w.String())
			}
		}
		if err == nil && len(pending) == 0 {
			var unserved []string
			unserved, err = unservedServices(ctx, c, ns)
			pending = append(pending, unserved...)
		}
		if err == nil && len(ws) > 0 && len(pending) == 0 {
			l.progress("%s: %s rolled out in %.1fs (%d workloads)", cluster, ns, time.Since(start).Seconds(), len(ws))
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				pending = append(pending, err.Error())
			}
			pending = append(pending, unreadyPods(ctx, c, ns)...)
			return fmt.Errorf("%s: %s not ready after %s: %s (kubectl -n %s get pods; logs under %s)", cluster, ns, timeout,
				strings.Join(pending, "; "), ns, filepath.Join(l.state.ClusterDir(cluster), "logs"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
