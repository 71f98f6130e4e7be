package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/k8sversion"
)

// Version is the kubelet version the lab's Nodes report.
const Version = k8sversion.Version

// Config is one node's kubelet.
type Config struct {
	Cluster      string
	Node         topology.Node
	DNSServiceIP netip.Addr
	Client       kubernetes.Interface
	// Strait is the strait binary (it runs whereami).
	Strait string
	// LogDir receives one log per workload.
	LogDir string
	// Labels and Annotations are extra Node metadata, kept in place on every start.
	Labels      map[string]string
	Annotations map[string]string
}

// Kubelet keeps one Node alive and runs its Pods.
type Kubelet struct {
	cfg   Config
	mu    sync.Mutex
	pods  map[types.UID]*podState
	used  map[netip.Addr]types.UID
	kick  chan struct{}
	start time.Time
}

type podState struct {
	ns, link string
	ip       netip.Addr
	ready    bool
}

// New returns a kubelet; Run starts it.
func New(cfg Config) *Kubelet {
	return &Kubelet{cfg: cfg, pods: map[types.UID]*podState{}, used: map[netip.Addr]types.UID{},
		kick: make(chan struct{}, 1), start: time.Now()}
}

// Run registers the Node, keeps its Lease and status fresh and syncs its Pods until ctx
// ends. Pods keep running after it returns; a new kubelet picks them up again.
func (k *Kubelet) Run(ctx context.Context) error {
	if err := k.register(ctx); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(k.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.Node.Name).String()
		}))
	podInformer := factory.Core().V1().Pods()
	_, _ = podInformer.Informer().AddEventHandler(kickHandler{k.kick})
	lister := podInformer.Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	lease := time.NewTicker(10 * time.Second)
	status := time.NewTicker(time.Minute)
	resync := time.NewTicker(5 * time.Second)
	defer lease.Stop()
	defer status.Stop()
	defer resync.Stop()
	k.renewLease(ctx)
	k.kickNow()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-lease.C:
			k.renewLease(ctx)
		case <-status.C:
			_ = k.updateNodeStatus(ctx)
		case <-resync.C:
			k.kickNow()
		case <-k.kick:
			pods, err := lister.List(labels.Everything())
			if err == nil {
				k.syncPods(ctx, pods)
			}
		}
	}
}

func (k *Kubelet) kickNow() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// register creates or refreshes the Node.
func (k *Kubelet) register(ctx context.Context) error {
	n := k.cfg.Node
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
	}
	if n.Gateway {
		labels[topology.GatewayLabel] = "true"
	}
	for key, v := range k.cfg.Labels {
		labels[key] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: k.cfg.Annotations},
		Spec:       corev1.NodeSpec{PodCIDR: n.PodCIDR.String(), PodCIDRs: []string{n.PodCIDR.String()}},
	}
	nodes := k.cfg.Client.CoreV1().Nodes()
	_, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = k.refreshMetadata(ctx, labels)
	}
	if err != nil {
		return fmt.Errorf("registering node %s: %w", n.Name, err)
	}
	return k.updateNodeStatus(ctx)
}

// refreshMetadata puts the lab's labels and annotations back on an existing Node.
func (k *Kubelet) refreshMetadata(ctx context.Context, labels map[string]string) error {
	nodes := k.cfg.Client.CoreV1().Nodes()
	cur, err := nodes.Get(ctx, k.cfg.Node.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	set := func(m *map[string]string, key, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		if (*m)[key] != v {
			(*m)[key], changed = v, true
		}
	}
	for key, v := range labels {
		set(&cur.Labels, key, v)
	}
	for key, v := range k.cfg.Annotations {
		set(&cur.Annotations, key, v)
	}
	if !changed {
		return nil
	}
	_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) updateNodeStatus(ctx context.Context) error {
	n := k.cfg.Node
	nodes := k.cfg.Client.CoreV1().Nodes()
	cur, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	cur.Status.Capacity, cur.Status.Allocatable = res, res
	cur.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.LANAddr.Addr().String()},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	if n.WANAddr.IsValid() {
		cur.Status.Addresses = append(cur.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: n.WANAddr.Addr().String()})
	}
	cur.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: Version, OperatingSystem: "linux", Architecture: "amd64",
		ContainerRuntimeVersion: "strait-lab://1", KernelVersion: "lab", OSImage: "strait lab"}
	cur.Status.Phase = corev1.NodeRunning
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now,
			LastTransitionTime: metav1.NewTime(k.start)}
	}
	cur.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
		cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated"),
	}
	_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) renewLease(ctx context.Context) {
	leases := k.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	name := k.cfg.Node.Name
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, _ = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &now},
		}, metav1.CreateOptions{})
		return
	}
	if err != nil {
		return
	}
	l.Spec.RenewTime = &now
	l.Spec.HolderIdentity = ptr.To(name)
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// resolvConf is what a pod's /etc/resolv.conf says.
func resolvConf(dns netip.Addr, namespace string) []byte {
	return fmt.Appendf(nil, "nameserver %s\nsearch %s.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n",
		dns, namespace)
}

// logPath is a workload's log file.
func (k *Kubelet) logPath(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.LogDir, fmt.Sprintf("pod-%s-%s.log", pod.Namespace, pod.Name))
}

func ensureDir(dir string) error { return os.MkdirAll(dir, 0o700) }

var errNoIP = errors.New("the node's pod CIDR is full")

// kickHandler wakes the sync loop on any pod event.
type kickHandler struct{ kick chan struct{} }

func (h kickHandler) wake() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (h kickHandler) OnAdd(any, bool)   { h.wake() }
func (h kickHandler) OnUpdate(any, any) { h.wake() }
func (h kickHandler) OnDelete(any)      { h.wake() }
