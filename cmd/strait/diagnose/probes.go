package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/probe"
)

// probeLabel marks diagnose's probe pods, so that a run that was killed leaves pods a
// later run removes.
const probeLabel = "strait.io/diagnose-probe"

// staleProbes is how old another run's probe pods must be for a run to remove them: a
// run that was killed left them. Younger ones are a run going on beside this one (two
// people on call, or diagnose and verify at once), each with its own pods.
const staleProbes = 15 * time.Minute

// probePodName is run's probe pod on node: "strait-diagnose-<run>-<node>", the node's
// name cut, and a hash of it added, where the whole would pass the 253 characters of an
// object name.
func probePodName(run, node string) string {
	name := "strait-diagnose-" + run + "-" + node
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(node)))
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(sum)-1], "-.") + "-" + sum
}

// probePod is one of diagnose's probe pods, Running with an IP, on a node of a member.
type probePod struct {
	name, node, ip string
	ips            []string // every address of the pod, one a family (status.podIPs)
	gateway        bool     // on a gateway-capable node
}

// image is the agent's image, which every node holds already.
func (m *member) image() (string, error) {
	if m.agents == nil {
		return "", fmt.Errorf("no DaemonSet %s/%s to take Strait's image from", straitv1.SystemNamespace, agentDaemonSet)
	}
	for _, c := range m.agents.Spec.Template.Spec.Containers {
		if c.Name == agentContainer {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("DaemonSet %s has no container %s", agentDaemonSet, agentContainer)
}

// startProbes creates a probe pod on every Ready node of the member, serving
// `straitd probe serve`, and removes pods an earlier run left.
func (m *member) startProbes(ctx context.Context, run string) error {
	image, err := m.image()
	if err != nil {
		return err
	}
	pods := m.kube.CoreV1().Pods(straitv1.SystemNamespace)
	m.removeStaleProbes(ctx, run)
	for _, n := range m.nodes {
		if m.nodeError(n.Name) != nil {
			continue // not Ready, or it did not answer: see the nodes line
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: probePodName(run, n.Name), Namespace: straitv1.SystemNamespace,
				Labels: map[string]string{probeLabel: "true", "run": run, "app.kubernetes.io/part-of": "strait"}},
			Spec: corev1.PodSpec{
				NodeName:                      n.Name,
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				AutomountServiceAccountToken:  ptr.To(false),
				Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name: "probe", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
					Args: []string{"probe", "serve", "--port", strconv.Itoa(probe.Port)},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				}},
			},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating probe pod %s: %w", p.Name, err)
		}
	}
	m.probesCreated = time.Now()
	return nil
}

// waitProbes waits until the probe pods of this run are Running with an IP, and returns
// those that are. A pod its kubelet has not taken up (written no status) within the node
// timeout of its creation, or that does not run within the pod-start timeout after, or
// ended, is left out and its node asked nothing more (see the nodes line); the others go
// on. An error only when the pods cannot be listed.
func (m *member) waitProbes(ctx context.Context, run string) ([]probePod, error) {
	var out []probePod
	var lastErr error
	for {
		list, err := m.kube.CoreV1().Pods(straitv1.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: probeLabel + ",run=" + run})
		since := time.Since(m.probesCreated)
		if err != nil {
			if lastErr = err; since > m.timeouts.node+m.timeouts.podStart {
				return nil, fmt.Errorf("listing the probe pods in %s: %w", m.name, lastErr)
			}
		} else {
			out = out[:0]
			waiting := 0
			for _, p := range list.Items {
				node := p.Spec.NodeName
				switch {
				case m.nodeError(node) != nil:
				case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
					m.failNode(node, &podStartError{node: node, pod: p.Name, state: podMessage(p), ended: true})
				case p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "":
					pp := probePod{name: p.Name, node: node, ip: p.Status.PodIP, gateway: m.gatewayCapable(node)}
					for _, ip := range p.Status.PodIPs {
						pp.ips = append(pp.ips, ip.IP)
					}
					out = append(out, pp)
				case !takenUp(p) && since > m.timeouts.node:
					m.failNode(node, &unansweredError{node: node, what: "probe pod " + p.Name + " never taken up by the node's kubelet", after: since})
				case takenUp(p) && since > m.timeouts.node+m.timeouts.podStart:
					m.failNode(node, &podStartError{node: node, pod: p.Name, state: podMessage(p), after: m.timeouts.podStart})
				default:
					waiting++
				}
			}
			if waiting == 0 {
				sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// takenUp says whether a pod's kubelet has written its status (its host IP, conditions):
// the API server writes none for a pod created on a node.
func takenUp(p corev1.Pod) bool {
	return p.Status.HostIP != "" || len(p.Status.Conditions) > 0 || p.Status.Phase != corev1.PodPending && p.Status.Phase != ""
}

func podMessage(p corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("%s (exit %d) %s", t.Reason, t.ExitCode, t.Message)
		}
		if w := s.State.Waiting; w != nil {
			return strings.TrimSpace(fmt.Sprintf("%s: %s %s", p.Status.Phase, w.Reason, w.Message))
		}
	}
	return strings.TrimSpace(string(p.Status.Phase) + " " + p.Status.Message)
}

// removeStaleProbes removes the probe pods of runs other than run that were made more
// than staleProbes ago.
func (m *member) removeStaleProbes(ctx context.Context, run string) {
	pods := m.kube.CoreV1().Pods(straitv1.SystemNamespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: probeLabel + ",run!=" + run})
	if err != nil {
		return // the pods of this run are made all the same
	}
	for _, p := range list.Items {
		if time.Since(p.CreationTimestamp.Time) > staleProbes {
			_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	}
}

// stopProbes removes the probe pods of this run.
func (m *member) stopProbes(ctx context.Context, run string) error {
	return m.kube.CoreV1().Pods(straitv1.SystemNamespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: probeLabel + ",run=" + run})
}

func nodeReady(n corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readyCondition is a node's Ready condition, nil without one.
func readyCondition(n corev1.Node) *corev1.NodeCondition {
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// gatewayCapable says whether a node has a Gateway object (the agent publishes one on
// every node the gateway selector matches).
func (m *member) gatewayCapable(node string) bool {
	for _, g := range m.gateways {
		if g.Spec.NodeName == node || g.Name == node {
			return true
		}
	}
	return false
}

// exec runs argv in a container of a pod on node, through the API server and the node's
// kubelet, as kubectl exec does, and returns its standard output. runs is the longest
// the command runs by its own timeouts; onNode bounds the rest.
func (m *member) exec(ctx context.Context, node, pod, container string, argv []string, runs time.Duration) ([]byte, error) {
	return onNode(ctx, m, node, fmt.Sprintf("exec of %s in pod %s", describe(argv), pod), runs,
		func(ctx context.Context, answered func()) ([]byte, error) {
			return m.execFn(ctx, pod, container, argv, answered)
		})
}

// execJSON runs argv and decodes its JSON output into v.
func (m *member) execJSON(ctx context.Context, node, pod, container string, argv []string, runs time.Duration, v any) error {
	out, err := m.exec(ctx, node, pod, container, argv, runs)
	if err != nil {
		return err
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w: %q", strings.Join(argv, " "), err, out)
	}
	return nil
}

// The longest the probes exec'd in probe pods run by their own timeouts (internal/probe):
// dial sends three hellos 20 ms apart, then connects and reads, each for --timeout (3 s
// here); mtu tries a small datagram three times for --timeout (1 s here), then up to six
// sizes three times each; lookup resolves for 3 s.
const (
	dialRuns   = 7 * time.Second
	mtuRuns    = 22 * time.Second
	lookupRuns = 4 * time.Second
)

// across is what one probe pod saw dialling another member's probe pod in one family:
// fromPod's and toPod's ip are that family's addresses.
type across struct {
	from, to string // members
	family   corev1.IPFamily
	fromPod  probePod
	toPod    probePod
	nonce    string
	seen     probe.Seen // what the TCP connection's server answered
	arrived  []string   // the hellos' source addresses, from the server's log
	dialErr  error
	mtu      *probe.MTU
	mtuErr   error
}

// dialAcross dials, from every probe pod of m, the probe pod of every other member on
// a plain node (a gateway node's when there is none), in each family the two share,
// and measures the path MTU in each from m's probe pod on a plain node, the longest way
// (node, gateway, cable). A pod without an address of a family is not dialled from or
// to in it: the cni check names it.
func dialAcross(ctx context.Context, m *member, mine []probePod, others map[string][]probePod, members []*member, measureMTU bool) []across {
	var out []across
	for _, other := range members {
		if other == m || len(others[other.name]) == 0 {
			continue
		}
		for _, f := range sharedFamilies(m, other) {
			to, ok := pickPlain(others[other.name]).inFamily(f)
			if !ok {
				continue
			}
			for _, p := range mine {
				from, ok := p.inFamily(f)
				if !ok {
					continue
				}
				a := across{from: m.name, to: other.name, family: f, fromPod: from, toPod: to, nonce: m.name + "/" + p.name + "/" + string(f)}
				addr := net.JoinHostPort(to.ip, strconv.Itoa(probe.Port))
				a.dialErr = m.execJSON(ctx, p.node, p.name, "probe", []string{"/straitd", "probe", "dial", "--nonce", a.nonce, "--timeout", "3s", addr}, dialRuns, &a.seen)
				if measureMTU && p.name == pickPlain(mine).name {
					var mtu probe.MTU
					if a.mtuErr = m.execJSON(ctx, p.node, p.name, "probe", []string{"/straitd", "probe", "mtu", "--timeout", "1s", addr}, mtuRuns, &mtu); a.mtuErr == nil {
						a.mtu = &mtu
					}
				}
				out = append(out, a)
			}
		}
	}
	return out
}

func pickPlain(pods []probePod) probePod {
	for _, p := range pods {
		if !p.gateway {
			return p
		}
	}
	return pods[0]
}

// lookups asks, from a probe pod of m, for every ServiceImport's clusterset.local name's
// A and AAAA records, through the pod's resolver (the cluster's DNS).
func lookups(ctx context.Context, m *member, mine []probePod) []lookup {
	if len(mine) == 0 {
		return nil
	}
	var out []lookup
	for _, si := range m.imports {
		name := si.Name + "." + si.Namespace + ".svc.clusterset.local"
		var res struct {
			Addresses []string        `json:"addresses"`
			Records   []probe.Records `json:"records"`
		}
		err := m.execJSON(ctx, mine[0].node, mine[0].name, "probe", []string{"/straitd", "probe", "lookup", "--records", "A,AAAA", name}, lookupRuns, &res)
		if olderProbe(err) {
			err = m.execJSON(ctx, mine[0].node, mine[0].name, "probe", []string{"/straitd", "probe", "lookup", name}, lookupRuns, &res)
		}
		out = append(out, lookup{name: name, pod: mine[0].name, addrs: res.Addresses, records: res.Records, families: importFamilies(m, si), err: err})
	}
	return out
}

// olderProbe says whether err is a straitd of an older build refusing a flag this
// strait asks it for (the daemons are upgraded after the CLI): the probe is asked again
// without it, and judged on what it can tell.
func olderProbe(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown flag")
}

// importFamilies are the families a ServiceImport is answered in: its ipFamilies, else
// its IPs', else the member's.
func importFamilies(m *member, si mcsv1.ServiceImport) []corev1.IPFamily {
	if len(si.Spec.IPFamilies) > 0 {
		return si.Spec.IPFamilies
	}
	var out []corev1.IPFamily
	for _, ip := range si.Spec.IPs {
		if f := familyOf(ip); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return m.families()
	}
	return out
}

// lookup is one clusterset.local name looked up from a probe pod: the addresses of
// both types, and each type's answer.
type lookup struct {
	name, pod string
	addrs     []string
	records   []probe.Records
	families  []corev1.IPFamily // the ServiceImport's
	err       error
}

// readArrivals fills in, from the probe servers' logs, the source address each dial's
// hellos arrived from.
func readArrivals(ctx context.Context, obs *observed) {
	seen := map[string]map[string][]string{} // member/pod -> nonce -> addresses
	for i := range obs.across {
		a := &obs.across[i]
		key := a.to + "/" + a.toPod.name
		if _, ok := seen[key]; !ok {
			if m := memberNamed(*obs, a.to); m != nil {
				seen[key] = probe.SeenIn(m.podLog(ctx, a.toPod))
			}
		}
		a.arrived = seen[key][a.nonce]
	}
}

// podLog is a probe pod's log ("" when it cannot be read).
func (m *member) podLog(ctx context.Context, p probePod) string {
	b, err := m.log(ctx, p.node, p.name, &corev1.PodLogOptions{})
	if err != nil {
		return ""
	}
	return string(b)
}

// log reads a container's log of a pod in strait-system on node, through the API
// server and the node's kubelet, within the node timeout.
func (m *member) log(ctx context.Context, node, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	what := "log of pod " + pod
	if opts.Container != "" {
		what += " container " + opts.Container
	}
	return onNode(ctx, m, node, what, 0, func(ctx context.Context, _ func()) ([]byte, error) {
		return m.logFn(ctx, pod, opts)
	})
}

// kubeLog reads a container's log of a pod in strait-system through the API server.
func (m *member) kubeLog(ctx context.Context, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	return m.kube.CoreV1().Pods(straitv1.SystemNamespace).GetLogs(pod, opts).DoRaw(ctx)
}
