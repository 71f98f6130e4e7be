package show

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/scheme"
)

const (
	userAgent = "strait-show"
	// requestTimeout bounds each request: an unreachable member is an error after
	// seconds, not a hang, and the other members are still shown.
	requestTimeout = 10 * time.Second
)

// hubFlags say where the hub is and which ClusterSet to read.
type hubFlags struct {
	kubeconfig, context, clusterSet string
}

// State is everything show reads: the ClusterSet from the hub and each member's objects.
type State struct {
	ClusterSet *straitv1.ClusterSet
	Members    []Member
}

// Member is what one member holds, or why it could not be read.
type Member struct {
	Name       string
	Err        error
	Membership *straitv1.Membership
	Peers      []straitv1.Peer
	Gateways   []straitv1.Gateway
	Exports    []mcsv1.ServiceExport
	Imports    []mcsv1.ServiceImport
}

// hubConfig loads the hub's kubeconfig as kubectl would: --kubeconfig, else KUBECONFIG,
// else ~/.kube/config, and --context or the current one.
func hubConfig(f hubFlags) (*rest.Config, error) {
	cfg, err := cli.PersonConfig("the hub", f.kubeconfig, f.context, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	cfg.UserAgent, cfg.Timeout = userAgent, requestTimeout
	return cfg, nil
}

// readClusterSet is the ClusterSet --clusterset names, or the hub's only one.
func readClusterSet(ctx context.Context, hub client.Client, name string) (*straitv1.ClusterSet, error) {
	if name != "" {
		ns, n, ok := strings.Cut(name, "/")
		if !ok {
			ns, n = straitv1.SystemNamespace, name
		}
		cs := &straitv1.ClusterSet{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, cs); err != nil {
			return nil, fmt.Errorf("--clusterset %s: %w", name, err)
		}
		return cs, nil
	}
	list := &straitv1.ClusterSetList{}
	if err := hub.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the hub's ClusterSets: %w", err)
	}
	switch len(list.Items) {
	case 0:
		return nil, errors.New("the hub holds no ClusterSet")
	case 1:
		return &list.Items[0], nil
	}
	var names []string
	for _, cs := range list.Items {
		names = append(names, cs.Namespace+"/"+cs.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("the hub holds %d ClusterSets (%s): name one with --clusterset NAMESPACE/NAME", len(names), strings.Join(names, ", "))
}

// hubClient is a client of the hub with Strait's types.
func hubClient(f hubFlags) (client.Client, error) {
	cfg, err := hubConfig(f)
	if err != nil {
		return nil, err
	}
	hub, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	return hub, nil
}

// read reads the ClusterSet and, one after the other, the members it names (only those in
// only, when given). A member that cannot be read carries its error; the others are read.
func read(ctx context.Context, f hubFlags, only []string) (*State, error) {
	cfg, err := hubConfig(f)
	if err != nil {
		return nil, err
	}
	kinds := scheme.New()
	hub, err := client.New(cfg, client.Options{Scheme: kinds})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	cs, err := readClusterSet(ctx, hub, f.clusterSet)
	if err != nil {
		return nil, err
	}
	st := &State{ClusterSet: cs}
	known := map[string]bool{}
	for _, c := range cs.Spec.Clusters {
		known[c.Name] = true
	}
	for _, n := range only {
		if !known[n] {
			return nil, fmt.Errorf("--cluster %s: no cluster %s in ClusterSet %s/%s (it has %s)", n, n, cs.Namespace, cs.Name, strings.Join(clusterNames(cs), ", "))
		}
	}
	for _, c := range cs.Spec.Clusters {
		if len(only) > 0 && !contains(only, c.Name) {
			continue
		}
		m := Member{Name: c.Name}
		mc, err := memberClient(ctx, hub, cfg, cs.Namespace, c, kinds)
		if err == nil {
			err = readMember(ctx, mc, &m)
		}
		m.Err = err
		st.Members = append(st.Members, m)
	}
	return st, nil
}

func clusterNames(cs *straitv1.ClusterSet) []string {
	var out []string
	for _, c := range cs.Spec.Clusters {
		out = append(out, c.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// memberClient reaches a member as the hub does: with the kubeconfig Secret the
// ClusterSet names, or, for a cluster without one, with the hub's own connection.
func memberClient(ctx context.Context, hub client.Reader, hubCfg *rest.Config, ns string, c straitv1.ClusterSpec, scheme *runtime.Scheme) (client.Client, error) {
	cfg := rest.CopyConfig(hubCfg)
	switch {
	case c.KubeConfig != nil && c.KubeConfig.SecretRef != nil:
		var err error
		if cfg, _, err = controllers.KubeConfigFromSecret(ctx, hub, ns, c.KubeConfig.SecretRef); err != nil {
			return nil, err
		}
	case c.KubeConfig != nil:
		return nil, errors.New("kubeConfig.configMapRef is not supported; use secretRef")
	}
	cfg.UserAgent, cfg.Timeout = userAgent, requestTimeout
	return client.New(cfg, client.Options{Scheme: scheme})
}

// readMember reads what the hub's member role lets it read: the Membership (by name),
// Peers and Gateways (lists: the role has no get on Gateways) in strait-system, and
// ServiceExports and ServiceImports in every namespace.
func readMember(ctx context.Context, mc client.Client, m *Member) error {
	ns := straitv1.SystemNamespace
	mem := &straitv1.Membership{}
	switch err := mc.Get(ctx, types.NamespacedName{Namespace: ns, Name: straitv1.MembershipName}, mem); {
	case err == nil:
		m.Membership = mem
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the Membership: %w", err)
	}
	peers := &straitv1.PeerList{}
	if err := mc.List(ctx, peers, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing Peers: %w", err)
	}
	gws := &straitv1.GatewayList{}
	if err := mc.List(ctx, gws, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing Gateways: %w", err)
	}
	exports := &mcsv1.ServiceExportList{}
	if err := mc.List(ctx, exports); err != nil {
		return fmt.Errorf("listing ServiceExports: %w", err)
	}
	imports := &mcsv1.ServiceImportList{}
	if err := mc.List(ctx, imports); err != nil {
		return fmt.Errorf("listing ServiceImports: %w", err)
	}
	m.Peers, m.Gateways, m.Exports, m.Imports = peers.Items, gws.Items, exports.Items, imports.Items
	sort.Slice(m.Peers, func(i, j int) bool { return m.Peers[i].Spec.ClusterID < m.Peers[j].Spec.ClusterID })
	sort.Slice(m.Gateways, func(i, j int) bool { return m.Gateways[i].Name < m.Gateways[j].Name })
	sort.Slice(m.Exports, func(i, j int) bool {
		return m.Exports[i].Namespace+"/"+m.Exports[i].Name < m.Exports[j].Namespace+"/"+m.Exports[j].Name
	})
	sort.Slice(m.Imports, func(i, j int) bool {
		return m.Imports[i].Namespace+"/"+m.Imports[i].Name < m.Imports[j].Namespace+"/"+m.Imports[j].Name
	})
	return nil
}
