package join

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/plan"
)

// The names kustomize/member gives the hub's identity in a member (docs/hub.md).
const (
	HubAccessAccount = "strait-hub-access"
	HubAccessToken   = "strait-hub-access-token"
	// fieldManager owns what --install applies.
	fieldManager = "strait-join"
)

// member is one cluster as the person's own credentials reach it.
type member struct {
	cfg  *rest.Config
	kube kubernetes.Interface
}

func connectMember(kubeconfig, context string) (*member, error) {
	cfg, err := cli.PersonConfig("the member", kubeconfig, context, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	cfg.UserAgent, cfg.Timeout = userAgent, requestTimeout
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &member{cfg: cfg, kube: kube}, nil
}

// kubeSystemUID is the UID of the member's kube-system namespace: which cluster this
// is, whatever address or credentials reach it (the hub records it per member).
func (m *member) kubeSystemUID(ctx context.Context) (string, error) {
	ns, err := m.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace %s of the member, whose UID tells whether the hub has it already: %w", metav1.NamespaceSystem, err)
	}
	return string(ns.UID), nil
}

// token is the hub-access token Secret's state after ensureToken.
type token struct {
	value, ca []byte
	created   bool
}

// ensureToken makes sure the long-lived token Secret of strait-hub-access exists and
// returns its token once the member's token controller has filled it. With rotate, the
// Secret is deleted first: a legacy token is only valid while its Secret is there, so
// the API server stops taking it once its cache of accepted tokens (10 s by default)
// forgets it, and the new Secret gets a new one.
func (m *member) ensureToken(ctx context.Context, rotate bool, timeout time.Duration, progress func(string, ...any)) (token, error) {
	secrets := m.kube.CoreV1().Secrets(straitv1.SystemNamespace)
	if _, err := m.kube.CoreV1().ServiceAccounts(straitv1.SystemNamespace).Get(ctx, HubAccessAccount, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return token{}, fmt.Errorf("the member has no ServiceAccount %s/%s: Strait is not installed there (give --install kustomize/member, or kubectl apply --server-side -k kustomize/member)", straitv1.SystemNamespace, HubAccessAccount)
		}
		return token{}, fmt.Errorf("reading ServiceAccount %s/%s: %w", straitv1.SystemNamespace, HubAccessAccount, err)
	}
	var old []byte
	if rotate {
		s, err := secrets.Get(ctx, HubAccessToken, metav1.GetOptions{})
		switch {
		case err == nil:
			old = s.Data[corev1.ServiceAccountTokenKey]
			if err := secrets.Delete(ctx, HubAccessToken, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return token{}, fmt.Errorf("deleting Secret %s/%s: %w", straitv1.SystemNamespace, HubAccessToken, err)
			}
			progress("deleted the token Secret %s/%s: its token is refused from now on (within the API server's 10 s token cache)", straitv1.SystemNamespace, HubAccessToken)
		case !apierrors.IsNotFound(err):
			return token{}, err
		}
	}
	var t token
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: HubAccessToken, Namespace: straitv1.SystemNamespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: HubAccessAccount},
			Labels:      map[string]string{"app.kubernetes.io/name": HubAccessAccount, "app.kubernetes.io/part-of": "strait"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	deadline := time.Now().Add(timeout)
	for {
		_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
		switch {
		case err == nil:
			t.created = true
			progress("created the token Secret %s/%s", straitv1.SystemNamespace, HubAccessToken)
		case apierrors.IsAlreadyExists(err):
		default:
			return token{}, fmt.Errorf("creating Secret %s/%s: %w", straitv1.SystemNamespace, HubAccessToken, err)
		}
		got, err := secrets.Get(ctx, HubAccessToken, metav1.GetOptions{})
		// A Secret being deleted (the rotation's) may still be there with the old token.
		if err == nil && got.DeletionTimestamp == nil && len(got.Data[corev1.ServiceAccountTokenKey]) > 0 &&
			string(got.Data[corev1.ServiceAccountTokenKey]) != string(old) {
			t.value, t.ca = got.Data[corev1.ServiceAccountTokenKey], got.Data[corev1.ServiceAccountRootCAKey]
			return t, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return token{}, err
		}
		if time.Now().After(deadline) {
			return token{}, fmt.Errorf("the member's token controller has not filled Secret %s/%s within %s (kube-controller-manager running with --service-account-private-key-file?)", straitv1.SystemNamespace, HubAccessToken, timeout)
		}
		select {
		case <-ctx.Done():
			return token{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// deleteToken deletes the token Secret: the hub's kubeconfig for the member stops
// working (within the API server's 10 s token cache).
func (m *member) deleteToken(ctx context.Context) (bool, error) {
	err := m.kube.CoreV1().Secrets(straitv1.SystemNamespace).Delete(ctx, HubAccessToken, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// hubKubeconfig is the kubeconfig the hub reaches the member with: the member's API
// server (server, or the one the person's kubeconfig names), its CA (the person's
// kubeconfig's, else the one in the token Secret) and the token.
func (m *member) hubKubeconfig(name, server string, t token) ([]byte, error) {
	if server == "" {
		server = m.cfg.Host
	}
	ca := m.cfg.CAData
	if len(ca) == 0 && m.cfg.CAFile != "" {
		data, err := os.ReadFile(m.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the member's CA: %w", err)
		}
		ca = data
	}
	if len(ca) == 0 {
		ca = t.ca
	}
	if len(ca) == 0 {
		return nil, errors.New("no CA for the member's API server: neither its kubeconfig nor the token Secret has one")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[HubAccessAccount] = &clientcmdapi.AuthInfo{Token: string(t.value)}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: HubAccessAccount, Namespace: straitv1.SystemNamespace}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// observed are the member's CIDRs as its API server tells them, of both families.
type observed struct {
	// NodePodCIDRs are every node's spec.podCIDRs.
	NodePodCIDRs []string `json:"nodePodCIDRs"`
	// PodCIDRs are the smallest prefix holding all of them, per family (IPv4 first).
	PodCIDRs []string `json:"podCIDRs"`
	// ServiceCIDRs are the ServiceCIDR API's.
	ServiceCIDRs []string `json:"serviceCIDRs"`
}

func (m *member) observe(ctx context.Context) (observed, error) {
	var o observed
	nodes, err := m.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return o, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		for _, c := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				o.NodePodCIDRs = append(o.NodePodCIDRs, p.Masked().String())
			}
		}
	}
	o.NodePodCIDRs = sortCIDRs(o.NodePodCIDRs)
	o.PodCIDRs = plan.Summarise(o.NodePodCIDRs)
	list, err := m.kube.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return o, fmt.Errorf("listing ServiceCIDRs (networking.k8s.io/v1, Kubernetes 1.33 or later): %w", err)
	}
	for _, s := range list.Items {
		for _, c := range s.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				o.ServiceCIDRs = append(o.ServiceCIDRs, p.Masked().String())
			}
		}
	}
	o.ServiceCIDRs = sortCIDRs(o.ServiceCIDRs)
	return o, nil
}

// sortCIDRs sorts CIDRs IPv4 first, by address, and drops repeats.
func sortCIDRs(cidrs []string) []string {
	ps := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	ps = slices.Compact(ps)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// install applies a kustomization (kustomize/member, or an overlay over it) to the
// member with server-side apply, as `kubectl apply --server-side -k DIR` does, and
// returns how many objects it applied. A kind whose CRD was just applied is retried
// until the API server serves it.
func (m *member) install(ctx context.Context, dir string, timeout time.Duration) (int, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return 0, fmt.Errorf("--install %s: %w", dir, err)
	}
	c, err := client.New(m.cfg, client.Options{})
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(timeout)
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return 0, err
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return 0, err
		}
		for {
			err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership)
			if err == nil {
				break
			}
			if !(apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err)) || time.Now().After(deadline) {
				return 0, fmt.Errorf("applying %s %s: %w", obj.GetKind(), strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/"), err)
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return len(res.Resources()), nil
}
