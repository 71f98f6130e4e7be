package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/cli"
)

// exitRefused: a GitOps tool applies the ClusterSet, and --suspend-gitops was not given.
const exitRefused = 2

// The labels and annotation by which Flux and Argo CD mark what they apply.
const (
	fluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	argoInstanceLabel  = "argocd.argoproj.io/instance"
	argoTrackingID     = "argocd.argoproj.io/tracking-id"
	partOfStrait       = "app.kubernetes.io/part-of=strait"
)

var (
	fluxKustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	argoApplications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

type uninstallOptions struct {
	members      memberFlags
	suspendSync  bool
	waitFinalize time.Duration
}

// NewUninstallCommand is `strait uninstall`.
func NewUninstallCommand() *cobra.Command {
	o := &uninstallOptions{waitFinalize: 3 * time.Minute}
	cmd := &cobra.Command{
		Use:   "uninstall [--suspend-gitops]",
		Short: "Remove Strait from the members and the hub, in order, and say what was removed",
		Long: `uninstall removes Strait with your own credentials for every cluster given (the contexts
of a kubeconfig, or --member-kubeconfig NAME=FILE; the hub is the cluster that holds the
ClusterSet), in the order docs/install.md gives:

  1. the ClusterSet in the hub, waiting for its finalizer: the hub removes what it wrote
     in every member, the agents then clean their nodes and strait dns takes its block
     out of CoreDNS's Corefile;
  2. in every member, once the Corefile block is gone: the agent DaemonSet (an agent
     that stops while its DaemonSet goes cleans its node), then Strait's cluster-wide
     roles and policies and its roles in other namespaces, the strait-system namespace
     and the CRDs (strait.io and the Multi-Cluster Services API's: ServiceExports go
     with them);
  3. the same in the hub.

Git first: when Flux or Argo CD applies the ClusterSet (their labels on it), deleting it
would only have it applied again. uninstall then stops and says which Kustomization or
Application to take it out of; with --suspend-gitops it suspends that sync first (a
Flux Kustomization's spec.suspend, an Argo CD Application's automated sync) and says
so: remove the ClusterSet from git before you resume it.

Exit status: 0 removed, 2 refused (a GitOps tool applies the ClusterSet), 3 an error.`,
		Example: `  strait uninstall --context hub --context c1 --context c2
  strait uninstall --suspend-gitops --member-kubeconfig hub=hub.kubeconfig --member-kubeconfig c1=c1.kubeconfig --member-kubeconfig c2=c2.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUninstall(cli.Context(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addMemberFlags(cmd, &o.members)
	cmd.Flags().BoolVar(&o.suspendSync, "suspend-gitops", false, "suspend the Flux Kustomization or Argo CD Application that applies the ClusterSet, then uninstall")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

// cluster is one cluster uninstall works on.
type cluster struct {
	*member
	dyn         dynamic.Interface
	clusterSets []straitv1.ClusterSet
}

func runUninstall(ctx context.Context, o *uninstallOptions, stdout, stderr io.Writer) error {
	targets, err := o.members.targets()
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	// The members are uninstalled side by side, so their lines come from several
	// goroutines: one at a time, each whole.
	var out sync.Mutex
	say := cli.Progress(stderr)
	progress := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		say(format, a...)
	}
	removed := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(stdout, "removed "+format+"\n", a...)
	}
	var clusters []*cluster
	for _, t := range targets {
		m := connect(t, defaultTimeouts()) // uninstall asks no node anything
		if m.err != nil {
			return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("%s: %w", t.name, m.err)}
		}
		c := &cluster{member: m}
		if c.dyn, err = dynamic.NewForConfig(t.cfg); err != nil {
			return &cli.ExitStatus{Code: exitError, Err: err}
		}
		list := &straitv1.ClusterSetList{}
		if err := m.c.List(ctx, list); err != nil && !meta404(err) {
			return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("%s (%s): listing ClusterSets: %w", t.name, t.from, err)}
		}
		c.clusterSets = list.Items
		clusters = append(clusters, c)
	}
	// Git first: nothing is deleted while a GitOps tool would apply it again.
	for _, c := range clusters {
		for _, cs := range c.clusterSets {
			sync := gitopsOf(cs)
			if sync == nil {
				continue
			}
			if !o.suspendSync {
				return &cli.ExitStatus{Code: exitRefused, Err: fmt.Errorf("ClusterSet %s/%s in %s is applied by %s: remove it from git and let %s prune it, or run again with --suspend-gitops to suspend that sync first",
					cs.Namespace, cs.Name, c.name, sync, sync.tool)}
			}
			if err := sync.suspend(ctx, c.dyn); err != nil {
				return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("suspending %s: %w", sync, err)}
			}
			fmt.Fprintf(stdout, "suspended %s: remove ClusterSet %s/%s from git before you resume it\n", sync, cs.Namespace, cs.Name)
		}
	}
	// 1. The ClusterSets, each waited for: its finalizer holds until the hub has
	// removed what it wrote in the members.
	for _, c := range clusters {
		for _, cs := range c.clusterSets {
			progress("deleting ClusterSet %s/%s in %s and waiting for its finalizer", cs.Namespace, cs.Name, c.name)
			obj := cs.DeepCopy()
			if err := c.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return &cli.ExitStatus{Code: exitError, Err: err}
			}
			if err := wait.PollUntilContextTimeout(ctx, time.Second, o.waitFinalize, true, func(ctx context.Context) (bool, error) {
				err := c.c.Get(ctx, types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}, &straitv1.ClusterSet{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("ClusterSet %s/%s is still there after %s (its status says why): %w", cs.Namespace, cs.Name, o.waitFinalize, err)}
			}
			removed("%s: ClusterSet %s/%s", c.name, cs.Namespace, cs.Name)
		}
	}
	// 2. and 3.: the members first, the hub (the clusters holding a ClusterSet) last;
	// the clusters of each step side by side, as most of it is waiting for each one's
	// controllers (the agents' cleanup, the namespace, the CRDs): two members took 44 s
	// one after the other in the lab.
	errs := make([]error, len(clusters))
	for _, hubLast := range []bool{false, true} {
		var wg sync.WaitGroup
		for i, c := range clusters {
			if (len(c.clusterSets) > 0) != hubLast {
				continue
			}
			wg.Go(func() { errs[i] = c.uninstall(ctx, progress, removed) })
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	return nil
}

// gitopsSync is the Flux Kustomization or Argo CD Application that applies an object.
type gitopsSync struct {
	tool, namespace, name string
}

func (g *gitopsSync) String() string {
	if g.tool == "Flux" {
		return fmt.Sprintf("Flux Kustomization %s/%s", g.namespace, g.name)
	}
	return fmt.Sprintf("Argo CD Application %s/%s", g.namespace, g.name)
}

// gitopsOf says which sync applies the ClusterSet, from the marks Flux and Argo CD put
// on what they apply; nil for none.
func gitopsOf(cs straitv1.ClusterSet) *gitopsSync {
	if name := cs.Labels[fluxNameLabel]; name != "" {
		return &gitopsSync{tool: "Flux", namespace: cs.Labels[fluxNamespaceLabel], name: name}
	}
	if id := cs.Annotations[argoTrackingID]; id != "" {
		// <app namespace>_<app name>:<group>/<kind>:<namespace>/<name>, or <app name>:… in
		// the Application controller's own namespace.
		app, _, _ := strings.Cut(id, ":")
		ns, name, ok := strings.Cut(app, "_")
		if !ok {
			ns, name = "argocd", app
		}
		return &gitopsSync{tool: "Argo CD", namespace: ns, name: name}
	}
	if name := cs.Labels[argoInstanceLabel]; name != "" {
		return &gitopsSync{tool: "Argo CD", namespace: "argocd", name: name}
	}
	return nil
}

func (g *gitopsSync) suspend(ctx context.Context, dyn dynamic.Interface) error {
	if g.tool == "Flux" {
		_, err := dyn.Resource(fluxKustomizations).Namespace(g.namespace).Patch(ctx, g.name, types.MergePatchType,
			[]byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{})
		return err
	}
	_, err := dyn.Resource(argoApplications).Namespace(g.namespace).Patch(ctx, g.name, types.MergePatchType,
		[]byte(`{"spec":{"syncPolicy":{"automated":null}}}`), metav1.PatchOptions{})
	return err
}

// uninstall removes the install from one cluster: the agents first (they clean their
// nodes as their DaemonSet goes), once strait dns has taken its block out of the
// Corefile; then what the install put outside strait-system, the namespace and the CRDs.
func (c *cluster) uninstall(ctx context.Context, progress func(string, ...any), removed func(string, ...any)) error {
	ns := straitv1.SystemNamespace
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		progress("%s: no %s namespace", c.name, ns)
	} else {
		progress("%s: waiting for strait dns to take its block out of CoreDNS's Corefile", c.name)
		_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			cm, err := c.kube.CoreV1().ConfigMaps(corefile.DefaultConfigMap.Namespace).Get(ctx, corefile.DefaultConfigMap.Name, metav1.GetOptions{})
			return err != nil || !strings.Contains(cm.Data[corefile.Key], corefile.BeginMarker), nil
		})
		if err := c.kube.AppsV1().DaemonSets(ns).Delete(ctx, agentDaemonSet, metav1.DeleteOptions{}); err == nil {
			progress("%s: waiting for the agents to clean their nodes and stop", c.name)
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentDaemonSet})
				return err == nil && len(pods.Items) == 0, nil
			}); err != nil {
				return fmt.Errorf("%s: the agents did not stop: %w", c.name, err)
			}
			removed("%s: DaemonSet %s/%s (the agents cleaned their nodes)", c.name, ns, agentDaemonSet)
		}
		if cm, err := c.kube.CoreV1().ConfigMaps(corefile.DefaultConfigMap.Namespace).Get(ctx, corefile.DefaultConfigMap.Name, metav1.GetOptions{}); err == nil &&
			strings.Contains(cm.Data[corefile.Key], corefile.BeginMarker) {
			// strait dns did not take it out (the cluster was no member): do it as
			// `straitd dns --cleanup` would.
			if cm.Data[corefile.Key], err = corefile.Remove(cm.Data[corefile.Key]); err == nil {
				if _, err := c.kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("%s: taking strait dns's block out of the Corefile: %w", c.name, err)
				}
				removed("%s: strait dns's block from %s", c.name, corefile.DefaultConfigMap)
			}
		}
	}
	var errs []error
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	} {
		list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: partOfStrait})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: listing %s: %w", c.name, gvr.Resource, err))
			continue
		}
		for _, o := range list.Items {
			if o.GetNamespace() == ns {
				continue // goes with the namespace
			}
			if err := c.dyn.Resource(gvr).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			removed("%s: %s %s", c.name, o.GetKind(), strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"))
		}
	}
	if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err == nil {
		progress("%s: waiting for namespace %s to go", c.name, ns)
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			errs = append(errs, fmt.Errorf("%s: namespace %s did not go: %w", c.name, ns, err))
		} else {
			removed("%s: namespace %s and everything in it", c.name, ns)
		}
	} else if !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	list, err := c.dyn.Resource(crds).List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	ours := func(name string) bool {
		return strings.HasSuffix(name, "."+straitv1.GroupVersion.Group) || strings.HasSuffix(name, ".multicluster.x-k8s.io")
	}
	var deleted []string
	for _, o := range list.Items {
		if !ours(o.GetName()) {
			continue
		}
		if err := c.dyn.Resource(crds).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, o.GetName())
	}
	// A CRD goes once the API server has deleted its objects (every ServiceExport).
	progress("%s: waiting for %d CRDs to go", c.name, len(deleted))
	for _, name := range deleted {
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			errs = append(errs, fmt.Errorf("%s: CustomResourceDefinition %s did not go: %w", c.name, name, err))
			continue
		}
		removed("%s: CustomResourceDefinition %s", c.name, name)
	}
	return errors.Join(errs...)
}
