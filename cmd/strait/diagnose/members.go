package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/probe"
	"github.com/straitnet/strait/internal/scheme"
)

const (
	userAgent = "strait-diagnose"
	// requestTimeout bounds each request: an unreachable member is an error after
	// seconds, not a hang.
	requestTimeout = 15 * time.Second
	// Names of Strait's workloads in strait-system, as kustomize/member installs them.
	agentDaemonSet = "strait-agent"
	agentContainer = "agent"
	dnsDeployment  = "strait-dns"
)

// memberFlags say how to reach the members: contexts of one kubeconfig, or a
// kubeconfig file per member.
type memberFlags struct {
	kubeconfig        string
	contexts          []string // CTX, or NAME=CTX
	memberKubeconfigs []string // NAME=FILE
}

// target is a member to diagnose and how to reach it.
type target struct {
	name string // as given: the context's name, or NAME of NAME=…
	from string // where its credentials come from, for messages
	cfg  *rest.Config
}

// targets are the members the flags name; without any, every context of the kubeconfig.
func (f memberFlags) targets() ([]target, error) {
	var out []target
	for _, mk := range f.memberKubeconfigs {
		name, file, ok := strings.Cut(mk, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--member-kubeconfig %q: want NAME=FILE", mk)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", file)
		if err != nil {
			return nil, fmt.Errorf("--member-kubeconfig %s: %w", mk, err)
		}
		out = append(out, target{name: name, from: file, cfg: cfg})
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	contexts := f.contexts
	if len(contexts) == 0 && len(f.memberKubeconfigs) == 0 {
		var err error
		if contexts, err = cli.Contexts(f.kubeconfig); err != nil {
			return nil, fmt.Errorf("the kubeconfig: %w", err)
		}
		if len(contexts) == 0 {
			return nil, errors.New("the kubeconfig has no context: give --context or --member-kubeconfig NAME=FILE")
		}
	}
	for _, c := range contexts {
		name, ctxName, ok := strings.Cut(c, "=")
		if !ok {
			ctxName = name
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: ctxName}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--context %s: %w", c, err)
		}
		out = append(out, target{name: name, from: "context " + ctxName, cfg: cfg})
	}
	for _, t := range out {
		t.cfg.UserAgent, t.cfg.Timeout = userAgent, requestTimeout
	}
	return out, nil
}

// member is everything read from one member; err says why it could not be read at all.
type member struct {
	name string
	from string
	cfg  *rest.Config
	kube kubernetes.Interface
	c    client.Client
	err  error

	// timeouts bound every call into a node (deadline.go); execFn makes the execs
	// (spdyExec) and logFn reads the logs (kubeLog), or a test's fakes do.
	timeouts timeouts
	execFn   execFunc
	logFn    func(ctx context.Context, pod string, opts *corev1.PodLogOptions) ([]byte, error)
	// mu guards failed: the nodes asked nothing more in this run, and why.
	mu     sync.Mutex
	failed map[string]error

	version      string
	membership   *straitv1.Membership
	peers        []straitv1.Peer
	gateways     []straitv1.Gateway
	nodes        []corev1.Node
	agents       *appsv1.DaemonSet
	agentPods    []corev1.Pod
	dns          *appsv1.Deployment
	dnsPods      []corev1.Pod
	corefile     string
	corefileErr  error
	serviceCIDRs []string
	serviceErr   error
	imports      []mcsv1.ServiceImport

	// facts are each node's, read in its agent's container; factsErr why not.
	facts    map[string]probe.NodeFacts
	factsErr map[string]error
	// flows are each node's conntrack entries towards the other members' probe pods,
	// read after the probes crossed.
	flows map[string][]probe.Flow
	// probesCreated is when this run's probe pods were created (waitProbes' deadlines).
	probesCreated time.Time
}

// readMembers connects to each target and reads it; those that cannot be read go into
// rep.Unreadable, those without a Membership (no member of a ClusterSet) into
// rep.Skipped, and the members are returned in the targets' order.
func readMembers(ctx context.Context, targets []target, to timeouts, rep *Report) []*member {
	var out []*member
	for _, t := range targets {
		m := connect(t, to)
		if m.err == nil {
			m.read(ctx)
		}
		switch {
		case m.err != nil:
			rep.Unreadable = append(rep.Unreadable, fmt.Sprintf("%s (%s): %v", t.name, t.from, m.err))
		case m.membership == nil:
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s (%s): no Strait Membership, not a member", t.name, t.from))
		default:
			out = append(out, m)
		}
	}
	return out
}

// connect makes the clients of a target.
func connect(t target, to timeouts) *member {
	m := &member{name: t.name, from: t.from, cfg: t.cfg, timeouts: to}
	m.execFn, m.logFn = m.spdyExec, m.kubeLog
	var err error
	if m.kube, err = kubernetes.NewForConfig(t.cfg); err == nil {
		m.c, err = client.New(t.cfg, client.Options{Scheme: scheme.New()})
	}
	m.err = err
	return m
}

// read reads what the checks judge. A member without a Membership is read no further:
// it is no member of a clusterset (a hub's context, say).
func (m *member) read(ctx context.Context) {
	v, err := m.kube.Discovery().ServerVersion()
	if err != nil {
		m.err = fmt.Errorf("%s (%s): %w", m.name, m.from, err)
		return
	}
	m.version = v.GitVersion
	ns := straitv1.SystemNamespace
	mem := &straitv1.Membership{}
	switch err := m.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: straitv1.MembershipName}, mem); {
	case err == nil:
		m.membership = mem
		if mem.Spec.ClusterID != "" {
			m.name = mem.Spec.ClusterID
		}
	case apierrors.IsNotFound(err) || meta404(err):
		return
	default:
		m.err = fmt.Errorf("reading the Membership: %w", err)
		return
	}
	var errs []error
	peers := &straitv1.PeerList{}
	errs = append(errs, m.c.List(ctx, peers, client.InNamespace(ns)))
	gws := &straitv1.GatewayList{}
	errs = append(errs, m.c.List(ctx, gws, client.InNamespace(ns)))
	nodes := &corev1.NodeList{}
	errs = append(errs, m.c.List(ctx, nodes))
	imports := &mcsv1.ServiceImportList{}
	if err := m.c.List(ctx, imports); err != nil && !meta404(err) {
		errs = append(errs, err)
	}
	m.peers, m.gateways, m.nodes, m.imports = peers.Items, gws.Items, nodes.Items, imports.Items
	sort.Slice(m.nodes, func(i, j int) bool { return m.nodes[i].Name < m.nodes[j].Name })
	for _, n := range m.nodes {
		if !nodeReady(n) {
			m.failNode(n.Name, &notReadyError{node: n.Name, cond: readyCondition(n)})
		}
	}
	sort.Slice(m.gateways, func(i, j int) bool { return m.gateways[i].Name < m.gateways[j].Name })
	if ds, err := m.kube.AppsV1().DaemonSets(ns).Get(ctx, agentDaemonSet, metav1.GetOptions{}); err == nil {
		m.agents = ds
	} else if !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if d, err := m.kube.AppsV1().Deployments(ns).Get(ctx, dnsDeployment, metav1.GetOptions{}); err == nil {
		m.dns = d
	} else if !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	var err1, err2 error
	m.agentPods, err1 = m.pods(ctx, agentDaemonSet)
	m.dnsPods, err2 = m.pods(ctx, dnsDeployment)
	errs = append(errs, err1, err2)
	cm, err := m.kube.CoreV1().ConfigMaps(corefile.DefaultConfigMap.Namespace).Get(ctx, corefile.DefaultConfigMap.Name, metav1.GetOptions{})
	if err == nil {
		m.corefile = cm.Data[corefile.Key]
	}
	m.corefileErr = err
	m.serviceCIDRs, m.serviceErr = m.readServiceCIDRs(ctx)
	if err := errors.Join(errs...); err != nil {
		m.err = fmt.Errorf("reading Strait's objects: %w", err)
	}
}

// meta404 says whether err means the kind is not served here: a 404, or no CRD (the
// REST mapper's "no matches", also inside a discovery error).
func meta404(err error) bool {
	var nm interface{ Status() metav1.Status }
	return errors.As(err, &nm) && nm.Status().Code == 404 || apimeta.IsNoMatchError(err) ||
		err != nil && strings.Contains(err.Error(), "no matches for")
}

func (m *member) pods(ctx context.Context, app string) ([]corev1.Pod, error) {
	list, err := m.kube.CoreV1().Pods(straitv1.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + app})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Spec.NodeName < list.Items[j].Spec.NodeName })
	return list.Items, nil
}

// readServiceCIDRs are the cluster's service CIDRs from the ServiceCIDR API
// (networking.k8s.io/v1, Kubernetes 1.33 and later).
func (m *member) readServiceCIDRs(ctx context.Context) ([]string, error) {
	list, err := m.kube.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Spec.CIDRs...)
	}
	sort.Strings(out)
	return out, nil
}

// The longest each probe exec'd in an agent runs by its own timeouts, beside the node
// timeout (onNode): `straitd probe node` asks kube-proxy's metrics endpoint twice with 2 s
// each; `straitd probe flows` reads the node's conntrack table.
const (
	nodeFactsRuns = 5 * time.Second
	flowsRuns     = 5 * time.Second
)

// nodesAtOnce is how many nodes are asked at once: a hung one holds its slot for the
// node timeout while the others go on.
const nodesAtOnce = 8

// eachNode runs ask for every node of the members, nodesAtOnce at a time, and returns
// when all have returned.
func eachNode(members []*member, ask func(m *member, node string)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, nodesAtOnce)
	for _, m := range members {
		for _, n := range m.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				ask(m, n.Name)
			}()
		}
	}
	wg.Wait()
}

// readFacts execs `straitd probe node` in every node's agent container, on all members'
// nodes at once, asking for the rules that drop the member's cable and vx-strait ports.
func readFacts(ctx context.Context, members []*member) {
	for _, m := range members {
		m.facts, m.factsErr = map[string]probe.NodeFacts{}, map[string]error{}
	}
	eachNode(members, func(m *member, node string) {
		var f probe.NodeFacts
		err := errors.New("no running agent on the node to read it from")
		if pod := m.agentOn(node); pod != nil {
			var ports []string
			for _, p := range udpPorts(m) {
				ports = append(ports, strconv.Itoa(p))
			}
			err = m.execJSON(ctx, node, pod.Name, agentContainer, []string{"/straitd", "probe", "node", "--udp-ports", strings.Join(ports, ",")}, nodeFactsRuns, &f)
			if olderProbe(err) {
				err = m.execJSON(ctx, node, pod.Name, agentContainer, []string{"/straitd", "probe", "node"}, nodeFactsRuns, &f)
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if err != nil {
			m.factsErr[node] = err
			return
		}
		m.facts[node] = f
	})
}

// readFlows execs `straitd probe flows` in every node's agent container: the conntrack
// entries towards each member's addresses (to), which say what source each connection
// left with.
func readFlows(ctx context.Context, members []*member, to map[string][]string) {
	for _, m := range members {
		m.flows = map[string][]probe.Flow{}
	}
	eachNode(members, func(m *member, node string) {
		pod := m.agentOn(node)
		if pod == nil || len(to[m.name]) == 0 {
			return
		}
		var f []probe.Flow
		if err := m.execJSON(ctx, node, pod.Name, agentContainer, []string{"/straitd", "probe", "flows", "--to", strings.Join(to[m.name], ",")}, flowsRuns, &f); err == nil {
			m.mu.Lock()
			m.flows[node] = f
			m.mu.Unlock()
		}
	})
}

// agentOn is the running agent pod of a node.
func (m *member) agentOn(node string) *corev1.Pod {
	for i, p := range m.agentPods {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return &m.agentPods[i]
		}
	}
	return nil
}

// addMemberFlags adds the flags that say how to reach the members, with the kubeconfig's
// contexts completed.
func addMemberFlags(cmd *cobra.Command, f *memberFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "the kubeconfig whose contexts reach the clusters (default: KUBECONFIG, ~/.kube/config)")
	fl.StringArrayVar(&f.contexts, "context", nil, "a cluster's context, CTX or NAME=CTX (repeatable; default: every context)")
	fl.StringArrayVar(&f.memberKubeconfigs, "member-kubeconfig", nil, "NAME=FILE: reach cluster NAME with this kubeconfig (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names, err := cli.Contexts(f.kubeconfig)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
