package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/flannel"
	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/lab/manifest"
	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/lab/topology"
)

// nodesDir holds the state directory of every real node (kept short: the kubelet's
// sockets live under it).
func (s State) nodesDir() string { return s.path("nodes") }

// nodeDir is one real node's state directory.
func (s State) nodeDir(name string) string { return s.path("nodes", name) }

// sampleImages are the images every real node imports: the sandbox and what the sample
// workloads run (the scheduler may put any of them on any node).
func sampleImages(withSamples bool) []string {
	imgs := []string{image.Pause}
	if withSamples {
		imgs = append(imgs, image.Whereami, image.Tools, image.IPerf3)
	}
	return imgs
}

// memberImages are what a member's node imports: the sandbox, Strait's agent, charon
// and dns, and the samples' images.
func memberImages(withSamples bool) []string {
	return append(sampleImages(withSamples), StraitdImage, CharonImage)
}

// hubImages are what the hub's node imports: the sandbox, strait hub and the workloads
// of the lab's GitOps controller (Flux's or Argo CD's).
func hubImages(g gitOps) ([]string, error) {
	imgs, err := g.images()
	return append([]string{image.Pause, StraitdImage}, imgs...), err
}

// workloadImages are the images of the Deployments' and StatefulSets' containers in an
// install manifest of the image directory (Flux's, Argo CD's), which make says how to
// build.
func (o Options) workloadImages(file, make string) ([]string, error) {
	path := filepath.Join(o.ImageDir, file)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, make)
	}
	objs, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var refs []string
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" && obj.GetKind() != "StatefulSet" {
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", field)
			for _, c := range cs {
				m, _ := c.(map[string]any)
				if ref, _ := m["image"].(string); ref != "" && !slices.Contains(refs, ref) {
					refs = append(refs, ref)
				}
			}
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("%s: no Deployment or StatefulSet", path)
	}
	return refs, nil
}

// imageTarball is where "make images" writes an image's tarball.
func (o Options) imageTarball(ref string) (string, error) {
	name, err := image.Spec{Ref: ref}.File()
	if err != nil {
		return "", err
	}
	return filepath.Join(o.ImageDir, name), nil
}

// checkNodeArtifacts says which binary or image a real-node lab lacks.
func (o Options) checkNodeArtifacts(t *topology.Lab, withSamples bool, hubImages []string) error {
	need := []string{o.bin("kubelet")}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "bridge", "host-local", "loopback"} {
		need = append(need, filepath.Join(o.NodeBin, b))
	}
	refs := memberImages(withSamples)
	for _, c := range t.Clusters {
		if on, _ := flannelOf(c); on {
			need = append(need, filepath.Join(o.NodeBin, "flannel"), o.flannelManifest())
			refs = append(refs, flannel.Image)
			break
		}
	}
	if t.Hub != nil {
		refs = append(refs, hubImages...)
	}
	for _, ref := range refs {
		p, err := o.imageTarball(ref)
		if err != nil {
			return err
		}
		need = append(need, p)
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("real nodes: missing %s (make node-binaries images image flux-images): %w", p, err)
		}
	}
	return nil
}

// realNode is what a real node of the lab needs beyond its topology.
type realNode struct {
	cluster string
	node    topology.Node
	// kubeconfig reaches the API server from the node's namespace.
	kubeconfig string
	dns        []netip.Addr
	images     []string
	cni        node.CNI
}

// ensureRealNodes registers every node of a member with its pod CIDR, labels and
// annotations (the kubelet finds its Node and keeps them: a kubelet cannot set a pod
// CIDR or annotations of the lab's own),
// then starts a real node (containerd, runc, CNI bridge, kubelet) in each node's network
// namespace that is not already up, all at once.
func (l *Lab) ensureRealNodes(ctx context.Context, c topology.Cluster, client kubernetes.Interface, withSamples bool) error {
	rns := l.memberRealNodes(c, withSamples)
	errs := make([]error, len(rns))
	var wg sync.WaitGroup
	for i, rn := range rns {
		wg.Go(func() { errs[i] = l.ensureRealNode(ctx, client, rn) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// memberRealNodes are the real nodes of a member cluster.
func (l *Lab) memberRealNodes(c topology.Cluster, withSamples bool) []realNode {
	images, cni := memberImages(withSamples), node.CNIBridge
	if on, _ := flannelOf(c); on {
		images, cni = append(images, flannel.Image), node.CNIFlannel
	}
	var rns []realNode
	for _, n := range c.Nodes {
		rns = append(rns, realNode{cluster: c.Name, node: n, kubeconfig: l.state.LANKubeconfig(c.Name),
			dns: []netip.Addr{c.DNSServiceIP}, images: images, cni: cni})
	}
	return rns
}

// hubRealNode is the hub's node, in the hub's namespace, reaching the API server on
// loopback, where strait hub runs.
func (l *Lab) hubRealNode(t *topology.Lab) (realNode, error) {
	g, err := l.gitOps()
	if err != nil {
		return realNode{}, err
	}
	images, err := hubImages(g)
	return realNode{cluster: topology.HubName, node: *t.HubNode, kubeconfig: l.state.InNamespaceKubeconfig(topology.HubName),
		dns: []netip.Addr{t.HubDNSServiceIP()}, images: images}, err
}

// ensureHubNode starts the hub's node.
func (l *Lab) ensureHubNode(ctx context.Context, t *topology.Lab, client kubernetes.Interface) error {
	rn, err := l.hubRealNode(t)
	if err != nil {
		return err
	}
	return l.ensureRealNode(ctx, client, rn)
}

// nodeLabels are the labels the lab gives a node's Node.
func nodeLabels(n topology.Node) map[string]string {
	labels := map[string]string{}
	if n.Gateway {
		labels[topology.GatewayLabel] = "true"
	}
	return labels
}

// nodeConfig is how lab/node starts rn, with kubeconfig (empty to prepare it).
func (l *Lab) nodeConfig(rn realNode, kubeconfig []byte) (node.Config, error) {
	var images []string
	for _, ref := range rn.images {
		p, err := l.opts.imageTarball(ref)
		if err != nil {
			return node.Config{}, err
		}
		images = append(images, p)
	}
	n := rn.node
	nodeIP, podCIDR, nodeIP6, podCIDR6 := n.LANAddr.Addr(), n.PodCIDR, n.LANAddr6.Addr(), n.PodCIDR6
	if n.IPv6Only() {
		nodeIP, podCIDR, nodeIP6, podCIDR6 = n.LANAddr6.Addr(), n.PodCIDR6, netip.Addr{}, netip.Prefix{}
	}
	return node.Config{
		Name: n.Name, NetNS: netns.Path(n.Namespace), NodeIP: nodeIP, PodCIDR: podCIDR,
		NodeIP6: nodeIP6, PodCIDR6: podCIDR6,
		KubeConfig: kubeconfig, BinDir: l.opts.NodeBin, Kubelet: l.opts.bin("kubelet"), StateDir: l.state.nodeDir(n.Name),
		Images: images, SandboxImage: image.Pause, Seeds: l.opts.Seeds, ClusterDNS: rn.dns, ClusterDomain: "cluster.local", Labels: nodeLabels(n), CNI: rn.cni,
		ExternalCloudProvider: n.ExternalIP.IsValid(),
	}, nil
}

func (l *Lab) ensureRealNode(ctx context.Context, client kubernetes.Interface, rn realNode) error {
	n := rn.node
	labels := nodeLabels(n)
	annotations := map[string]string{}
	if n.WANAddr.IsValid() {
		// Gateways reach each other over the WAN, not their cluster's LAN. Behind the
		// router's NAT they have no WAN address: the ClusterSet says how to reach them.
		// An IPv6-only cluster's gateways are reached at their IPv6 WAN address.
		annotations[GatewayIPAnnotation] = n.GatewayIP().String()
	}
	var podCIDRs []string
	for _, p := range []netip.Prefix{n.PodCIDR, n.PodCIDR6} {
		if p.IsValid() {
			podCIDRs = append(podCIDRs, p.String())
		}
	}
	_, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{PodCIDR: podCIDRs[0], PodCIDRs: podCIDRs},
	}, metav1.CreateOptions{})
	switch {
	case err == nil:
		// The address the kubelet will report, at once: kube-proxy, started before the
		// nodes, waits 30 s for its Node's addresses, goes on without, and exits when
		// they change later ("NodeIPs changed"), which a slow node start (a flannel
		// cluster waits for flanneld) made it do.
		// A merge patch of the status alone: the node lifecycle controller writes the new
		// Node too (its taints), and an update would conflict with it.
		// Behind a 1:1 NAT the node's public address is its ExternalIP, as a cloud
		// provider's controller sets it (the kubelet then runs with an external cloud
		// provider and keeps the addresses it finds).
		var addrs []corev1.NodeAddress
		for _, a := range n.InternalIPs() {
			addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
		}
		if n.ExternalIP.IsValid() {
			addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: n.ExternalIP.String()})
		}
		body, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": addrs}})
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("node %s's address: %w", n.Name, err)
		}
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("registering node %s: %w", n.Name, err)
	}
	if e := l.takeEarly(n.Name); e != nil {
		return l.startEarly(ctx, rn, e)
	}
	dir := l.state.nodeDir(n.Name)
	if _, err := os.Stat(filepath.Join(dir, "node.json")); err == nil {
		_, containerd := l.state.Pid(rn.cluster, "containerd-"+n.Name)
		if containerd && kubeletHealthy(ctx, n.Namespace) == nil {
			return nil // up already (lab up again)
		}
		// Its kubelet or containerd is gone (killed, or its namespace was): start the
		// node afresh, as "lab up" restarts any other process that died.
		l.progress("%s: kubelet not answering or containerd not running; restarting the node", n.Name)
		// Not a component exiting under "lab up": the teardown below stops them.
		for _, component := range []string{"containerd", "kubelet"} {
			_ = os.Remove(l.state.pidPath(rn.cluster, component+"-"+n.Name))
		}
		if err := node.Teardown(dir); err != nil {
			return err
		}
	}
	kc, err := os.ReadFile(rn.kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := l.nodeConfig(rn, kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.state.nodesDir(), 0o755); err != nil {
		return err
	}
	start := time.Now()
	nd, err := node.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if err := l.recordNode(rn.cluster, n.Name, nd); err != nil {
		return err
	}
	tm := nd.Timings()
	l.progress("%s: real node up in %.1fs (containerd %.1fs, images %.1fs by %s, kubelet %.1fs)", n.Name,
		time.Since(start).Seconds(), tm.Containerd.Seconds(), tm.Images.Seconds(), tm.ImagesFrom, tm.Kubelet.Seconds())
	return nil
}

// LoadImages imports image tarballs into every real node of the lab, all nodes at once.
func (l *Lab) LoadImages(ctx context.Context, tarballs ...string) error {
	_, t, err := l.Load()
	if err != nil {
		return err
	}
	var nodes []string
	if t.HubNode != nil {
		nodes = append(nodes, t.HubNode.Name)
	}
	for _, c := range t.Clusters {
		for _, n := range c.Nodes {
			nodes = append(nodes, n.Name)
		}
	}
	start := time.Now()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, name := range nodes {
		wg.Go(func() {
			for _, tb := range tarballs {
				if err := node.ImportImage(ctx, l.state.nodeDir(name), l.opts.NodeBin, tb); err != nil {
					errs[i] = errors.Join(errs[i], fmt.Errorf("node %s: %w", name, err))
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.progress("loaded %d images into %d nodes in %.1fs", len(tarballs), len(nodes), time.Since(start).Seconds())
	return nil
}

// kubeletHealthy asks the kubelet's health endpoint on the node's loopback.
func kubeletHealthy(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	hc := &http.Client{Transport: inNamespace(ns)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(node.HealthzPort)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kubelet healthz: %s", resp.Status)
	}
	return nil
}

// recordNode records a node's containerd and kubelet as components of the lab, with
// their logs at the lab's usual place (links into the node's state), so "lab up" stops
// as soon as one of them exits and "lab status" lists them.
func (l *Lab) recordNode(cluster, name string, nd *node.Node) error {
	containerd, kubelet := nd.Pids()
	for component, pid := range map[string]int{"containerd": containerd, "kubelet": kubelet} {
		key := component + "-" + name
		link := l.state.LogPath(cluster, key)
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return err
		}
		_ = os.Remove(link)
		if err := os.Symlink(nd.LogPath(component), link); err != nil {
			return err
		}
		if err := l.state.WritePid(cluster, key, pid); err != nil {
			return err
		}
	}
	return nil
}
