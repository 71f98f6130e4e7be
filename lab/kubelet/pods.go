package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/netns"
)

// syncPods makes the pod namespaces match the Pods bound to this node.
func (k *Kubelet) syncPods(ctx context.Context, pods []*corev1.Pod) {
	wanted := map[types.UID]bool{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			k.teardown(ctx, pod.UID)
			if pod.DeletionTimestamp != nil {
				_ = k.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
					GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			}
			continue
		}
		wanted[pod.UID] = true
		if err := k.runPod(ctx, pod); err != nil {
			k.reportFailure(ctx, pod, err)
		}
	}
	k.mu.Lock()
	var gone []types.UID
	for uid := range k.pods {
		if !wanted[uid] {
			gone = append(gone, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range gone {
		k.teardown(ctx, uid)
	}
}

// runPod makes the pod's namespace and veth, starts its workload and reports status. It
// is cheap when everything is in place already.
func (k *Kubelet) runPod(ctx context.Context, pod *corev1.Pod) error {
	st, err := k.plumb(ctx, pod)
	if err != nil {
		return err
	}
	kind, port := workload.For(pod)
	if argv := workload.Argv(kind, port, k.cfg.Strait, workload.Identity{
		Cluster: k.cfg.Cluster, Node: k.cfg.Node.Name, Namespace: pod.Namespace, Pod: pod.Name, PodIP: st.ip.String(),
	}); argv != nil && len(netns.Pids(st.ns)) == 0 {
		if err := ensureDir(k.cfg.LogDir); err != nil {
			return err
		}
		if _, err := netns.Start(st.ns, k.logPath(pod), nil, argv...); err != nil {
			return err
		}
		st.ready = false
	}
	if !st.ready {
		st.ready = port == 0 || listening(ctx, st.ns, netip.AddrPortFrom(st.ip, uint16(port)))
	}
	if pod.Status.PodIP == st.ip.String() && pod.Status.Phase == corev1.PodRunning && isReady(pod) == st.ready {
		return nil
	}
	return k.reportRunning(ctx, pod, st)
}

// plumb makes the pod's namespace, veth, addresses, routes and resolv.conf.
func (k *Kubelet) plumb(ctx context.Context, pod *corev1.Pod) (*podState, error) {
	k.mu.Lock()
	st, ok := k.pods[pod.UID]
	k.mu.Unlock()
	if ok && netns.Exists(st.ns) {
		return st, nil
	}
	ns := topology.PodNamespace(k.cfg.Cluster, string(pod.UID))
	link := topology.PodLink(string(pod.UID))
	ip, err := k.allocate(pod)
	if err != nil {
		return nil, err
	}
	st = &podState{ns: ns, link: link, ip: ip}
	node := k.cfg.Node
	gw := node.PodGateway
	err = errors.Join(
		netns.WriteEtc(ns, "resolv.conf", resolvConf(k.cfg.DNSServiceIP, pod.Namespace)),
		netns.WriteEtc(ns, "hostname", []byte(pod.Name+"\n")),
		netns.Ensure(ctx, ns))
	if err == nil {
		err = netns.EnsureVeth(ctx, netns.VethPair{
			NS: node.Namespace, Name: link, Addr: netip.PrefixFrom(gw, 32),
			PeerNS: ns, Peer: "eth0", PeerAddr: netip.PrefixFrom(ip, 32),
		})
	}
	if err == nil {
		err = errors.Join(
			netns.ReplaceRoute(ctx, ns, netip.PrefixFrom(gw, 32), netip.Addr{}, "eth0"),
			netns.ReplaceRoute(ctx, ns, netip.MustParsePrefix("0.0.0.0/0"), gw, "eth0"),
			netns.ReplaceRoute(ctx, node.Namespace, netip.PrefixFrom(ip, 32), netip.Addr{}, link))
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s network: %w", pod.Namespace, pod.Name, err)
	}
	k.mu.Lock()
	k.pods[pod.UID] = st
	k.mu.Unlock()
	return st, nil
}

// allocate gives the pod its IP: the one it holds already, or the one it reports when
// that is free, else the lowest free address of the node's pod CIDR after the gateway.
func (k *Kubelet) allocate(pod *corev1.Pod) (netip.Addr, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cidr := k.cfg.Node.PodCIDR
	for a, owner := range k.used {
		if owner == pod.UID {
			return a, nil // its namespace went away; the pod keeps its address
		}
	}
	if a, err := netip.ParseAddr(pod.Status.PodIP); err == nil && cidr.Contains(a) {
		if owner, taken := k.used[a]; !taken || owner == pod.UID {
			k.used[a] = pod.UID
			return a, nil
		}
	}
	for a := k.cfg.Node.PodGateway.Next(); cidr.Contains(a); a = a.Next() {
		if _, taken := k.used[a]; !taken && a != lastAddr(cidr) {
			k.used[a] = pod.UID
			return a, nil
		}
	}
	return netip.Addr{}, errNoIP
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := (uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// teardown removes a pod's namespace (killing its workload), veth and route, and frees its IP.
func (k *Kubelet) teardown(ctx context.Context, uid types.UID) {
	k.mu.Lock()
	st, ok := k.pods[uid]
	delete(k.pods, uid)
	if ok {
		delete(k.used, st.ip)
	}
	k.mu.Unlock()
	ns := topology.PodNamespace(k.cfg.Cluster, string(uid))
	// The node end of the veth goes with the pod's namespace.
	_ = netns.Delete(ctx, ns)
}

// Adopt takes over pod namespaces a previous kubelet of this node left: their veths are
// in this node's namespace. Those whose Pod is gone are removed on the first sync.
func (k *Kubelet) Adopt(ctx context.Context, pods []corev1.Pod) {
	for i := range pods {
		pod := &pods[i]
		ns := topology.PodNamespace(k.cfg.Cluster, string(pod.UID))
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || !netns.Exists(ns) || !netns.LinkExists(ctx, k.cfg.Node.Namespace, topology.PodLink(string(pod.UID))) {
			continue
		}
		k.mu.Lock()
		k.pods[pod.UID] = &podState{ns: ns, link: topology.PodLink(string(pod.UID)), ip: ip, ready: isReady(pod)}
		k.used[ip] = pod.UID
		k.mu.Unlock()
	}
}

func (k *Kubelet) reportRunning(ctx context.Context, pod *corev1.Pod, st *podState) error {
	p := pod.DeepCopy()
	now := metav1.Now()
	ready := corev1.ConditionFalse
	if st.ready {
		ready = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = k.cfg.Node.LANAddr.Addr().String()
	p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
	p.Status.PodIP = st.ip.String()
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "strait-lab://" + st.ns,
			Ready: st.ready, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *p.Status.StartTime}},
		})
	}
	_, err := k.cfg.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the next sync sees the newer object
	}
	return err
}

func (k *Kubelet) reportFailure(ctx context.Context, pod *corev1.Pod, cause error) {
	p := pod.DeepCopy()
	msg := cause.Error()
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Message == msg {
			return // reported already
		}
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		Reason: "LabSetupFailed", Message: msg, LastTransitionTime: metav1.Now()}}
	_, _ = k.cfg.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// listening says whether something accepts TCP on addr inside the pod's namespace.
func listening(ctx context.Context, ns string, addr netip.AddrPort) bool {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c, err := netns.Dial(ctx, ns, "tcp", addr.String())
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
