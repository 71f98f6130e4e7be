package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/topology"
)

// Status prints every cluster's processes, nodes and pods.
func (l *Lab) Status(ctx context.Context, w io.Writer) error {
	_, t, err := l.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "nodes: kubelet, containerd, runc; their state under %s\n", l.state.nodesDir())
	pids := l.state.AllPids()
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tPROCESS\tSTATE")
	names := make([]string, 0, len(pids))
	for k := range pids {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		cluster, proc, _ := strings.Cut(k, "/")
		state := "running"
		if !netns.Alive(pids[k]) {
			state = "NOT RUNNING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (pid %d)\n", cluster, proc, state, pids[k])
	}
	_ = tw.Flush()
	for _, cp := range t.ControlPlanes() {
		fmt.Fprintf(w, "\n== %s  (kubeconfig: %s)\n", cp.Cluster, l.state.KubeconfigPath(cp.Cluster))
		if cp.Cluster == topology.HubName {
			fmt.Fprint(w, l.gitStatus(ctx))
		}
		client, err := l.HostClient(cp.Cluster)
		if err != nil {
			fmt.Fprintf(w, "  %v\n", err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		nodes, err := client.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			fmt.Fprintf(w, "  API server: %v\n", err)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
		var ws []rollout
		for _, ns := range []string{straitv1.SystemNamespace, flux.Namespace} {
			w, _ := workloads(cctx, client, ns)
			ws = append(ws, w...)
		}
		{
			for _, r := range ws {
				state := "rolling out"
				if r.done() {
					state = "Ready"
				}
				fmt.Fprintf(tw, "  %s/%s\t%s\t%d/%d ready\t%d up to date\n", strings.ToLower(r.Kind), r.Name, state, r.Ready, r.Desired, r.Update)
			}
		}
		for _, n := range nodes.Items {
			fmt.Fprintf(tw, "  node/%s\t%s\t%s\t%s\n", n.Name, NodeReady(&n), strings.Join(n.Spec.PodCIDRs, ","), n.Labels[topology.GatewayLabel])
		}
		pods, err := client.CoreV1().Pods("").List(cctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			for _, p := range pods.Items {
				ips := make([]string, 0, len(p.Status.PodIPs))
				for _, ip := range p.Status.PodIPs {
					ips = append(ips, ip.IP)
				}
				fmt.Fprintf(tw, "  pod/%s/%s\t%s\t%s\t%s\n", p.Namespace, p.Name, PodReady(&p), strings.Join(ips, ","), p.Spec.NodeName)
			}
		}
		_ = tw.Flush()
	}
	return nil
}

// NodeReady is "Ready" for a node whose Ready condition is true, else "NotReady".
func NodeReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return "Ready"
		}
	}
	return "NotReady"
}

// PodReady is "Ready" for a ready pod, else its phase.
func PodReady(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return "Ready"
		}
	}
	return string(p.Status.Phase)
}

// HostClient talks to a cluster through its loopback forwarder.
func (l *Lab) HostClient(cluster string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.state.KubeconfigPath(cluster))
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Kubeconfig returns a cluster's kubeconfig for the host.
func (l *Lab) Kubeconfig(cluster string) ([]byte, error) {
	if _, _, err := l.Load(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(l.state.KubeconfigPath(cluster))
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cluster, err)
	}
	return data, nil
}

// findPod looks a pod up by NAME, NAMESPACE/NAME or a Deployment's name when it has one
// pod, and returns it with a client config for its cluster.
func (l *Lab) findPod(ctx context.Context, cluster, pod string) (*corev1.Pod, *rest.Config, error) {
	_, t, err := l.Load()
	if err != nil {
		return nil, nil, err
	}
	c, ok := t.Cluster(cluster)
	if !ok {
		return nil, nil, fmt.Errorf("no member cluster %q in this lab", cluster)
	}
	cfg, err := l.inNamespaceConfig(c.Name, c.ControlPlane.Namespace)()
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	ns, name, found := strings.Cut(pod, "/")
	if !found {
		ns, name = "", pod
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil, nil, err
	}
	if len(pods.Items) == 0 {
		// A prefix such as "client" finds the Deployment's single pod.
		all, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		for _, p := range all.Items {
			if strings.HasPrefix(p.Name, name+"-") && p.DeletionTimestamp == nil {
				pods.Items = append(pods.Items, p)
			}
		}
	}
	switch len(pods.Items) {
	case 0:
		return nil, nil, fmt.Errorf("no pod %q in cluster %s", pod, cluster)
	case 1:
	default:
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		return nil, nil, fmt.Errorf("pod %q is ambiguous in cluster %s: %s", pod, cluster, strings.Join(names, ", "))
	}
	return &pods.Items[0], cfg, nil
}
