package diagnose

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/probe"
	"github.com/straitnet/strait/nodeagent/route"
)

// short are the deadlines of these tests: long enough for a fake that answers at once,
// short enough to keep the tests fast.
var short = timeouts{node: 300 * time.Millisecond, podStart: 500 * time.Millisecond}

// fakeLab is two members of a healthy lab on fake API servers whose execs answer at
// once, but for the node hung: every exec in a pod there, and every read of such a
// pod's log, never returns (a stopped kubelet; the fake does not even heed its context),
// and a probe pod created there is never taken up.
type fakeLab struct {
	hung    string
	members []*member
	mu      sync.Mutex
	podIPs  map[string]string // pod -> its IP
	podNode map[string]string // pod -> its node
	stuck   chan struct{}     // closed at the end of the test: the stuck calls return
	calls   map[string]int    // node -> calls that reached it
}

func newFakeLab(t *testing.T, hung string) *fakeLab {
	l := &fakeLab{hung: hung, podIPs: map[string]string{}, podNode: map[string]string{}, stuck: make(chan struct{}), calls: map[string]int{}}
	t.Cleanup(func() { close(l.stuck) })
	c1, c2 := twoMembers()
	ip := 10
	for _, m := range []*member{c1, c2} {
		kube := fake.NewClientset()
		prefix := m.membership.Spec.PodCIDRs[0][:len("10.x")]
		kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.podNode[p.Name] = p.Spec.NodeName
			if p.CreationTimestamp.IsZero() { // as the API server stamps it
				p.CreationTimestamp = metav1.Now()
			}
			if p.Spec.NodeName == l.hung {
				return false, nil, nil // its kubelet never writes a status
			}
			ip++
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.250.0.1", PodIP: fmt.Sprintf("%s.9.%d", prefix, ip)}
			l.podIPs[p.Name] = p.Status.PodIP
			return false, nil, nil
		})
		m.kube, m.timeouts, m.execFn = kube, short, l.exec(m)
		m.logFn = func(_ context.Context, pod string, _ *corev1.PodLogOptions) ([]byte, error) {
			if l.reach(pod) {
				<-l.stuck
			}
			return []byte("log\n"), nil
		}
		m.membership.Spec.Cable.Port = 51871
		m.agents = &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: agentContainer, Image: "strait/straitd:test"}}}}}}
		for i, n := range m.nodes {
			m.nodes[i].Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			l.podNode["agent-"+n.Name] = n.Name
			m.agentPods[i].Namespace = straitv1.SystemNamespace
		}
		m.gateways = []straitv1.Gateway{{Spec: straitv1.GatewaySpec{NodeName: m.name + "-gw", HAState: straitv1.HAActive}}}
		other := "c2"
		if m.name == "c2" {
			other = "c1"
		}
		m.peers = []straitv1.Peer{{Spec: straitv1.PeerSpec{ClusterID: other},
			Status: straitv1.PeerStatus{State: "Connected", LastHandshake: &metav1.Time{Time: time.Now()}}}}
		m.dns = &appsv1.Deployment{}
		m.dnsPods = []corev1.Pod{running("dns-"+m.name, m.name+"-node", true)}
		m.corefile = corefile.BeginMarker + "\n" + corefile.EndMarker
		m.facts, m.factsErr = nil, nil
		l.members = append(l.members, m)
	}
	return l
}

// reach counts a call that reaches pod's node and says whether that node is hung.
func (l *fakeLab) reach(pod string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	node := l.podNode[pod]
	l.calls[node]++
	return node == l.hung
}

func (l *fakeLab) exec(m *member) execFunc {
	return func(_ context.Context, pod, _ string, argv []string, answered func()) ([]byte, error) {
		if l.reach(pod) {
			<-l.stuck // never taken up while the test runs, whatever the context says
			return nil, errors.New("the test ended")
		}
		answered()
		var v any
		switch strings.Join(argv[1:3], " ") {
		case "probe node":
			v = probe.NodeFacts{KubeProxy: probe.KubeProxy{Mode: "nftables"}, StraitChains: []string{route.SourceChain}}
		case "probe dial":
			l.mu.Lock()
			own := l.podIPs[pod]
			l.mu.Unlock()
			v = probe.Seen{Local: own, Seen: own}
		case "probe mtu":
			v = probe.MTU{PathMTU: 1420, FullAnswered: true, Small: true}
		case "probe lookup":
			v = map[string][]string{"addresses": {"10.99.0.5"}}
		case "probe flows":
			v = []probe.Flow{}
		case "agent --dump":
			return []byte("link vx-strait\n"), nil
		default:
			return nil, fmt.Errorf("the fake runs no %v", argv)
		}
		return json.Marshal(v)
	}
}

func line(results []Result, check, cluster string) (Result, bool) {
	for _, r := range results {
		if r.Check == check && r.Cluster == cluster {
			return r, true
		}
	}
	return Result{}, false
}

// TestAHungNodeFailsNamedWithinTheDeadlineAndTheOthersStillRun: c2's gateway node does
// not answer (its execs and log reads never return). diagnose all fails a "nodes" line
// for c2 that names the node and says what to do, within the node timeout and well
// before a second one; nothing more is asked of that node; every check still prints
// its line for both members, c1's and the rest of c2's passing, and the run exits with
// the failure code.
func TestAHungNodeFailsNamedWithinTheDeadlineAndTheOthersStillRun(t *testing.T) {
	l := newFakeLab(t, "c2-gw")
	rep := &Report{}
	start := time.Now()
	err := diagnoseMembers(context.Background(), l.members, checkNames, &options{timeouts: short}, rep, func(string, ...any) {})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = printReport(&table, rep, "")
	t.Logf("diagnose all with c2-gw hung, %s:\n%s", took.Round(time.Millisecond), table.String())
	if took > short.node+short.podStart {
		t.Errorf("diagnose all took %s with a hung node, want less than the node timeout and the pod-start timeout (%s)", took, short.node+short.podStart)
	}
	nodes, ok := line(rep.Results, checkNodes, "c2")
	switch {
	case !ok:
		t.Fatal("no nodes line for c2")
	case nodes.Status != Fail || !strings.Contains(nodes.Detail, "node c2-gw did not answer within 300ms") || !strings.Contains(nodes.Detail, "straitd probe node"):
		t.Errorf("nodes c2: %+v, want a failure naming c2-gw and the exec it did not answer", nodes)
	case !strings.Contains(nodes.Fix, "kubectl get node c2-gw") || !strings.Contains(nodes.Fix, "kubelet") || !strings.Contains(nodes.Fix, "--node-timeout"):
		t.Errorf("nodes c2: the fix %q does not say kubectl get node c2-gw, the kubelet and --node-timeout", nodes.Fix)
	}
	if rep.Results[0].Check != checkNodes {
		t.Errorf("the first line is %s, want the nodes line", rep.Results[0].Check)
	}
	if _, ok := line(rep.Results, checkNodes, "c1"); ok {
		t.Error("a nodes line for c1, whose nodes all answered")
	}
	for _, check := range checkNames {
		for _, c := range []string{"c1", "c2"} {
			r, ok := line(rep.Results, check, c)
			if !ok {
				t.Errorf("no %s line for %s", check, c)
				continue
			}
			if r.Status != Pass {
				t.Errorf("%s %s: %s %q, want pass: the other nodes answered", check, c, r.Status, r.Detail)
			}
		}
	}
	if r, _ := line(rep.Results, checkKubeProxy, "c2"); !strings.Contains(r.Detail, "c2-gw left out (see the nodes line)") {
		t.Errorf("kube-proxy c2: %q does not say c2-gw was left out", r.Detail)
	}
	if n := l.calls["c2-gw"]; n != 1 {
		t.Errorf("%d calls reached the hung node, want 1: once it did not answer it is asked nothing more", n)
	}
	if code := exitCodeOf(exitOf(rep)); code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
}

// TestAProbePodItsKubeletNeverTakesUpFailsItsNode: with only the dns check asked (no
// exec in the agents first), the hung node's probe pod is never taken up; after the node
// timeout the node is a failed nodes line, and dns is judged from the other pods.
func TestAProbePodItsKubeletNeverTakesUpFailsItsNode(t *testing.T) {
	l := newFakeLab(t, "c2-node")
	rep := &Report{}
	m := l.members[1]
	m.imports = nil
	start := time.Now()
	if err := diagnoseMembers(context.Background(), l.members, []string{checkDNS}, &options{timeouts: short}, rep, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > short.node+short.podStart {
		t.Errorf("took %s, want less than %s", took, short.node+short.podStart)
	}
	nodes, ok := line(rep.Results, checkNodes, "c2")
	if !ok || !strings.Contains(nodes.Detail, "node c2-node did not answer within") || !regexp.MustCompile(`probe pod strait-diagnose-[0-9a-z]+-c2-node never taken up by the node's kubelet`).MatchString(nodes.Detail) {
		t.Errorf("nodes c2: %+v, want the probe pod that was never taken up named", nodes)
	}
	for _, c := range []string{"c1", "c2"} {
		if r, ok := line(rep.Results, checkDNS, c); !ok || r.Status != Pass {
			t.Errorf("dns %s: %+v, want pass from the pods that run", c, r)
		}
	}
}

// TestACallTakenUpThatDoesNotEndFailsItsNode: an exec the kubelet took up but that does
// not end within its own bound and the node timeout gives up and names the node.
func TestACallTakenUpThatDoesNotEndFailsItsNode(t *testing.T) {
	m := &member{name: "c1", timeouts: short}
	stuck := make(chan struct{})
	defer close(stuck)
	start := time.Now()
	_, err := onNode(context.Background(), m, "c1-gw", "exec of straitd probe node in pod a", 200*time.Millisecond,
		func(_ context.Context, answered func()) (int, error) {
			answered()
			<-stuck
			return 0, nil
		})
	took := time.Since(start)
	var u *unansweredError
	if !errors.As(err, &u) || !u.started || !strings.Contains(err.Error(), "node c1-gw: exec of straitd probe node in pod a did not end within") {
		t.Fatalf("err %v, want the node named and the call that did not end", err)
	}
	if want := short.node + 200*time.Millisecond; took < want || took > want+time.Second {
		t.Errorf("gave up after %s, want %s (the call's own bound and the node timeout)", took, want)
	}
	if _, err := onNode(context.Background(), m, "c1-gw", "log of pod b", 0, func(context.Context, func()) (int, error) { return 1, nil }); !errors.As(err, &u) || !strings.Contains(err.Error(), "log of pod b not asked") {
		t.Errorf("a second call: %v, want it not asked", err)
	}
	// A call that is taken up late but ends within its bound is no failure.
	other := &member{name: "c1", timeouts: short}
	v, err := onNode(context.Background(), other, "c1-node", "x", time.Second, func(_ context.Context, answered func()) (int, error) {
		time.Sleep(short.node / 2)
		answered()
		time.Sleep(short.node)
		return 7, nil
	})
	if err != nil || v != 7 {
		t.Errorf("a slow but answering call: %d, %v", v, err)
	}
}

// TestGatherReportsAHungNodesPartMissingAndGathersTheRest: the logs and the kernel
// dump of the pods on the hung node are missing, each named with why, and the other
// nodes' are in the tarball.
func TestGatherReportsAHungNodesPartMissingAndGathersTheRest(t *testing.T) {
	l := newFakeLab(t, "c2-gw")
	m := l.members[1]
	for _, p := range m.agentPods {
		p.Labels = map[string]string{"app.kubernetes.io/name": agentDaemonSet}
		p.Spec.Containers = []corev1.Container{{Name: agentContainer}}
		if _, err := m.kube.CoreV1().Pods(straitv1.SystemNamespace).Create(context.Background(), &p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	a := &archive{tw: tar.NewWriter(&buf), top: "g", now: time.Now()}
	start := time.Now()
	gatherLogs(context.Background(), m, a)
	if took := time.Since(start); took > 2*short.node {
		t.Errorf("gathered in %s, want within one node timeout (%s) of the healthy run", took, short.node)
	}
	_ = a.tw.Close()
	errs := strings.Join(a.errs, "\n")
	t.Logf("errors:\n%s", errs)
	for _, want := range []string{"log of agent-c2-gw/agent on node c2-gw missing: node c2-gw did not answer within 300ms", "dump/c2-gw.txt (straitd agent --dump) missing"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the errors do not say %q", want)
		}
	}
	files := map[string]bool{}
	tr := tar.NewReader(&buf)
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		files[h.Name] = true
	}
	for _, want := range []string{"g/c2/logs/agent-c2-node_agent.log", "g/c2/dump/c2-node.txt"} {
		if !files[want] {
			t.Errorf("no %s in the tarball: %v", want, files)
		}
	}
}

// TestVerifyDoesNotStopTheActiveGatewayWhenNoStandbyAnswers: c2's only standby is hung,
// so stopping its active gateway would leave c2 without one: gateway-failover fails
// naming why, without deleting anything.
func TestVerifyDoesNotStopTheActiveGatewayWhenNoStandbyAnswers(t *testing.T) {
	l := newFakeLab(t, "c2-node")
	c1, c2 := l.members[0], l.members[1]
	c2.gateways = append(c2.gateways, straitv1.Gateway{Spec: straitv1.GatewaySpec{NodeName: "c2-node", HAState: straitv1.HAPassive}})
	c2.failNode("c2-node", &unansweredError{node: "c2-node", what: "x", after: short.node})
	obs := observed{members: l.members, probes: map[string][]probePod{
		"c1": {{name: "p1", node: "c1-node", ip: "10.8.2.5"}}, "c2": {{name: "p2", node: "c2-gw", ip: "10.9.1.5", gateway: true}}}}
	r := verifyFailover(context.Background(), obs)
	if r.Status != Fail || !strings.Contains(r.Detail, "not tried") || !strings.Contains(r.Detail, "c2-gw") {
		t.Errorf("gateway-failover: %+v, want a failure saying it was not tried", r)
	}
	if acts := c2.kube.(*fake.Clientset).Actions(); len(acts) > 0 {
		t.Errorf("verify wrote to c2: %v", acts)
	}
	_ = c1
}

func exitCodeOf(err error) int {
	var es *cli.ExitStatus
	if errors.As(err, &es) {
		return es.Code
	}
	if err == nil {
		return 0
	}
	return -1
}
