package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/cli"
)

type gatherOptions struct {
	members  memberFlags
	dir      string
	timeouts timeouts
}

// NewGatherCommand is `strait gather`.
func NewGatherCommand() *cobra.Command {
	o := &gatherOptions{}
	cmd := &cobra.Command{
		Use:   "gather [--dir DIR]",
		Short: "Write a tarball of what support needs: objects, events, daemon logs, every agent's kernel dump, the Corefile, versions",
		Long: `gather collects, with your own credentials for each cluster (the contexts of a kubeconfig,
or --member-kubeconfig NAME=FILE; a context holding ClusterSets is read as the hub), into
DIR/strait-gather-TIME.tar.gz:

  versions.txt                   this strait's build, every cluster's Kubernetes version
  CLUSTER/objects/*.yaml         Strait's objects (ClusterSets in the hub; Membership,
                                 Peers, Gateways, GlobalIngresses, ServiceExports,
                                 ServiceImports, their EndpointSlices in members), the
                                 pods, DaemonSets and Deployments of strait-system, the
                                 nodes, the ServiceCIDRs, the gateway Lease
  CLUSTER/events.yaml            the events of strait-system and kube-system
  CLUSTER/logs/POD_CONTAINER.log every container of strait-system (and .previous.log after
                                 a restart), the last 5000 lines each
  CLUSTER/dump/NODE.txt          straitd agent --dump, run in each node's agent: everything
                                 of Strait's in the node's kernel
  CLUSTER/Corefile               CoreDNS's Corefile (kube-system/coredns)
  CLUSTER/secrets.txt            the Secrets of strait-system by name and labels, read as
                                 metadata only: no Secret's data is ever read

A log and a kernel dump are read through their node's kubelet, within --node-timeout:
a node that does not answer in time is asked nothing more, its part is missing from the
tarball, and errors.txt (and standard error) says which and why; the rest is gathered.

Exit status: 0 all was gathered, 1 something could not be (the tarball holds the rest and
an errors.txt), 3 nothing could be read.`,
		Example: `  strait gather --context hub --context c1 --context c2 --dir /tmp
  strait gather --member-kubeconfig c1=c1.kubeconfig --member-kubeconfig c2=c2.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGather(cli.Context(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addMemberFlags(cmd, &o.members)
	addTimeoutFlags(cmd, &o.timeouts, false, missedTarball)
	f.StringVar(&o.dir, "dir", ".", "where to write the tarball")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

// archive is the tarball being written: files under one top directory.
type archive struct {
	tw   *tar.Writer
	top  string
	now  time.Time
	errs []string
}

func (a *archive) add(name string, data []byte) {
	hdr := &tar.Header{Name: a.top + "/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: a.now, Typeflag: tar.TypeReg}
	if err := a.tw.WriteHeader(hdr); err == nil {
		_, _ = a.tw.Write(data)
	}
}

func (a *archive) failed(format string, args ...any) {
	a.errs = append(a.errs, fmt.Sprintf(format, args...))
}

func runGather(ctx context.Context, o *gatherOptions, stdout, stderr io.Writer) error {
	if err := o.timeouts.validate(); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	targets, err := o.members.targets()
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	now := time.Now().UTC()
	top := "strait-gather-" + now.Format("20060102-150405")
	path := filepath.Join(o.dir, top+".tar.gz")
	file, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	defer file.Close()
	zw := gzip.NewWriter(file)
	a := &archive{tw: tar.NewWriter(zw), top: top, now: now}
	b := cli.Version()
	versions := fmt.Sprintf("strait %s (revision %s, %s)\n", b.Version, b.Revision, b.Go)
	read := 0
	for _, t := range targets {
		fmt.Fprintf(stderr, "… gathering %s (%s)\n", t.name, t.from)
		m := connect(t, o.timeouts)
		if m.err != nil {
			a.failed("%s: %v", t.name, m.err)
			continue
		}
		v, err := m.kube.Discovery().ServerVersion()
		if err != nil {
			a.failed("%s (%s): %v", t.name, t.from, err)
			continue
		}
		read++
		versions += fmt.Sprintf("%s: Kubernetes %s\n", t.name, v.GitVersion)
		gatherCluster(ctx, m, a)
		if nodes := m.failedNodes(); len(nodes) > 0 {
			a.failed("%s: what to do about %s: %s", t.name, strings.Join(nodes, ", "), hungNodeFix(nodes, o.timeouts, false))
		}
	}
	a.add("versions.txt", []byte(versions))
	if len(a.errs) > 0 {
		a.add("errors.txt", []byte(strings.Join(a.errs, "\n")+"\n"))
	}
	err = errors.Join(a.tw.Close(), zw.Close(), file.Close())
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	for _, e := range a.errs {
		fmt.Fprintln(stderr, "error:", e)
	}
	fmt.Fprintln(stdout, path)
	switch {
	case read == 0:
		return &cli.ExitStatus{Code: exitError, Err: errors.New("no cluster could be read")}
	case len(a.errs) > 0:
		return &cli.ExitStatus{Code: 1}
	}
	return nil
}

// gathered are the kinds gathered from every cluster that serves them, by namespace
// ("" every namespace) and label selector.
var gathered = []struct {
	gvr       schema.GroupVersionResource
	namespace string
	selector  string
}{
	{straitv1.GroupVersion.WithResource("clustersets"), "", ""},
	{straitv1.GroupVersion.WithResource("clustersetmembers"), "", ""},
	{straitv1.GroupVersion.WithResource("memberships"), straitv1.SystemNamespace, ""},
	{straitv1.GroupVersion.WithResource("peers"), straitv1.SystemNamespace, ""},
	{straitv1.GroupVersion.WithResource("gateways"), straitv1.SystemNamespace, ""},
	{straitv1.GroupVersion.WithResource("globalingresses"), straitv1.SystemNamespace, ""},
	{schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceexports"}, "", ""},
	{schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}, "", ""},
	{schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, "", "multicluster.kubernetes.io/source-cluster"},
	{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, straitv1.SystemNamespace, ""},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, straitv1.SystemNamespace, ""},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, straitv1.SystemNamespace, ""},
	{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, straitv1.SystemNamespace, ""},
	{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", ""},
	{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "servicecidrs"}, "", ""},
}

func gatherCluster(ctx context.Context, m *member, a *archive) {
	dyn, err := dynamic.NewForConfig(m.cfg)
	if err != nil {
		a.failed("%s: %v", m.name, err)
		return
	}
	for _, g := range gathered {
		list, err := dyn.Resource(g.gvr).Namespace(g.namespace).List(ctx, metav1.ListOptions{LabelSelector: g.selector})
		switch {
		case meta404(err):
			continue // not served here: a hub has no Peers, a member no ClusterSets
		case err != nil:
			a.failed("%s: listing %s: %v", m.name, g.gvr.Resource, err)
			continue
		case len(list.Items) == 0:
			continue
		}
		a.add(m.name+"/objects/"+g.gvr.Resource+".yaml", objectsYAML(list.Items))
	}
	var events []byte
	for _, ns := range []string{straitv1.SystemNamespace, "kube-system"} {
		list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			a.failed("%s: events of %s: %v", m.name, ns, err)
			continue
		}
		events = append(events, objectsYAML(list.Items)...)
	}
	a.add(m.name+"/events.yaml", events)
	if cm, err := m.kube.CoreV1().ConfigMaps(corefile.DefaultConfigMap.Namespace).Get(ctx, corefile.DefaultConfigMap.Name, metav1.GetOptions{}); err == nil {
		a.add(m.name+"/Corefile", []byte(cm.Data[corefile.Key]))
	}
	gatherSecretNames(ctx, m, a)
	gatherLogs(ctx, m, a)
}

// objectsYAML is a list of objects as YAML documents, without managedFields.
func objectsYAML(items []unstructured.Unstructured) []byte {
	var b bytes.Buffer
	for _, it := range items {
		u := it.DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		if y, err := yaml.Marshal(u.Object); err == nil {
			b.WriteString("---\n")
			b.Write(y)
		}
	}
	return b.Bytes()
}

// gatherSecretNames lists strait-system's Secrets by name and labels, read as metadata
// only (PartialObjectMetadata): their data never reaches this process.
func gatherSecretNames(ctx context.Context, m *member, a *archive) {
	mc, err := metadata.NewForConfig(m.cfg)
	if err != nil {
		a.failed("%s: %v", m.name, err)
		return
	}
	list, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(straitv1.SystemNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		a.failed("%s: listing the Secrets of %s (metadata only): %v", m.name, straitv1.SystemNamespace, err)
		return
	}
	var b strings.Builder
	for _, s := range list.Items {
		var labels []string
		for k, v := range s.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		fmt.Fprintf(&b, "%s %s\n", s.Name, strings.Join(labels, ","))
	}
	a.add(m.name+"/secrets.txt", []byte(b.String()))
}

// gatherLogs takes every container's log in strait-system (diagnose's own probe pods
// aside), and each agent's kernel dump.
func gatherLogs(ctx context.Context, m *member, a *archive) {
	pods, err := m.kube.CoreV1().Pods(straitv1.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "!" + probeLabel})
	if err != nil {
		a.failed("%s: listing the pods of %s: %v", m.name, straitv1.SystemNamespace, err)
		return
	}
	tail := int64(5000)
	for _, p := range pods.Items {
		node := p.Spec.NodeName
		for _, c := range p.Spec.Containers {
			logs, err := m.log(ctx, node, p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail})
			if err != nil {
				a.failed("%s: log of %s/%s on node %s missing: %v", m.name, p.Name, c.Name, orDash(node), err)
				continue
			}
			a.add(fmt.Sprintf("%s/logs/%s_%s.log", m.name, p.Name, c.Name), logs)
			if restarted(p, c.Name) {
				if prev, err := m.log(ctx, node, p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail, Previous: true}); err == nil {
					a.add(fmt.Sprintf("%s/logs/%s_%s.previous.log", m.name, p.Name, c.Name), prev)
				}
			}
		}
		if p.Labels["app.kubernetes.io/name"] == agentDaemonSet && p.Status.Phase == corev1.PodRunning {
			out, err := m.exec(ctx, node, p.Name, agentContainer, []string{"/straitd", "agent", "--dump"}, dumpRuns)
			if err != nil {
				a.failed("%s: dump/%s.txt (straitd agent --dump) missing: %v", m.name, node, err)
				continue
			}
			a.add(fmt.Sprintf("%s/dump/%s.txt", m.name, p.Spec.NodeName), out)
		}
	}
}

// dumpRuns is the longest `straitd agent --dump` runs: it reads the node's links,
// routes, rules and nftables through netlink.
const dumpRuns = 5 * time.Second

func restarted(p corev1.Pod, container string) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container {
			return s.RestartCount > 0
		}
	}
	return false
}
