package diagnose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Everything diagnose, verify, benchmark and gather ask of a node goes through the API
// server to the node's kubelet: an exec in the agent's container or in a probe pod, a
// pod's log, a probe pod started there. A kubelet that is stopped, or a node whose disk
// or kernel froze, answers none of it, and the API server waits on the kubelet for as
// long as the caller does: an exec's stream never opens. So every such call has a
// deadline, and a node that misses one is asked nothing more in that run: it is a failed
// "nodes" line naming it (nodeResults), and the other checks run without it.

// The deadlines' defaults. On the lab a healthy `strait diagnose all` runs its 25 execs,
// its 6 probe pods and its log reads in about 4 s, so a kubelet takes an exec up in well
// under a second and a probe pod (the agent's image, already on the node) runs within
// one or two; TestDiagnoseNeverHangs measures it again beside the hung node.
const (
	// defaultNodeTimeout is how long a node's kubelet may take to take up an exec (the
	// stream opened), to answer a log read, or to take up a probe pod (the pod's status
	// first written): tens of times what it takes on the lab, a few times what it takes
	// on a loaded node, and short enough that diagnose all with a hung node ends within
	// a minute.
	defaultNodeTimeout = 10 * time.Second
	// defaultPodStartTimeout is how long a probe pod its kubelet took up may take to run
	// with an IP: a sandbox, the CNI's ADD and a container of an image the node holds.
	defaultPodStartTimeout = 30 * time.Second
)

// timeouts are the deadlines of one run (--node-timeout, --pod-start-timeout).
type timeouts struct {
	node     time.Duration
	podStart time.Duration
}

func defaultTimeouts() timeouts {
	return timeouts{node: defaultNodeTimeout, podStart: defaultPodStartTimeout}
}

// The consequences of a missed deadline, for the flags' help.
const (
	missedNodesLine = "a node that does not is a failed \"nodes\" line and is asked nothing more"
	missedLeftOut   = "a node that does not is named on standard error and left out (during a measurement, named in the error)"
	missedTarball   = "a node that does not is asked nothing more, and its part of the tarball is missing, named in errors.txt"
)

// addTimeoutFlags adds --node-timeout and, for the commands that start probe pods,
// --pod-start-timeout; missed says what a node that misses a deadline is.
func addTimeoutFlags(cmd *cobra.Command, t *timeouts, podStart bool, missed string) {
	*t = defaultTimeouts()
	calls := "take up an exec or answer a log read"
	if podStart {
		calls = "take up an exec, answer a log read or take up a probe pod"
	}
	cmd.Flags().DurationVar(&t.node, "node-timeout", t.node,
		fmt.Sprintf("how long a node's kubelet may take to %s; %s (give a slow, loaded cluster longer)", calls, missed))
	if podStart {
		cmd.Flags().DurationVar(&t.podStart, "pod-start-timeout", t.podStart,
			"how long a probe pod may take to run once its kubelet took it up; "+missed)
	}
}

func (t timeouts) validate() error {
	if t.node <= 0 || t.podStart <= 0 {
		return fmt.Errorf("--node-timeout %s, --pod-start-timeout %s: want more than 0", t.node, t.podStart)
	}
	return nil
}

// execFunc runs argv in a container of a pod in strait-system through the API server
// and the pod's kubelet, as kubectl exec does, and returns its standard output; it calls
// answered once the kubelet has taken the exec up (the stream is upgraded).
type execFunc func(ctx context.Context, pod, container string, argv []string, answered func()) ([]byte, error)

// spdyExec is the execFunc of a member's API server.
func (m *member) spdyExec(ctx context.Context, pod, container string, argv []string, answered func()) ([]byte, error) {
	req := m.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(straitv1.SystemNamespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	rt, up, err := spdy.RoundTripperFor(m.cfg)
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(answeredTransport{rt, answered}, up, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("exec %s in %s: %w", strings.Join(argv, " "), pod, err)
		}
		return nil, errors.New(strings.TrimPrefix(msg, "error: "))
	}
	return stdout.Bytes(), nil
}

// answeredTransport tells when the API server answered an exec's upgrade request, which
// it does only once the kubelet answered it (or failed to).
type answeredTransport struct {
	http.RoundTripper
	answered func()
}

func (t answeredTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	t.answered()
	return resp, err
}

// unansweredError is a node that did not answer a call through its kubelet in time.
type unansweredError struct {
	node  string
	what  string // the call not answered: "exec of straitd probe node in pod strait-agent-x, through the API server and the node's kubelet"
	after time.Duration
	// started: the kubelet took the call up, but it did not end within its own bound
	// and the node timeout (a node whose processes froze).
	started bool
}

func (e *unansweredError) Error() string {
	if e.started {
		return fmt.Sprintf("node %s: %s did not end within %s", e.node, e.what, roundOff(e.after))
	}
	return fmt.Sprintf("node %s did not answer within %s (%s)", e.node, roundOff(e.after), e.what)
}

// notReadyError is a node its Ready condition says is not ready: it is asked nothing.
type notReadyError struct {
	node string
	cond *corev1.NodeCondition
}

func (e *notReadyError) Error() string {
	if e.cond == nil {
		return fmt.Sprintf("node %s has no Ready condition: not asked", e.node)
	}
	return fmt.Sprintf("node %s is not Ready (%s since %s: %s): not asked", e.node, e.cond.Status,
		e.cond.LastTransitionTime.Format(time.TimeOnly), strings.TrimSuffix(e.cond.Message, "."))
}

// podStartError is a probe pod that did not run in time, or ended, on its node.
type podStartError struct {
	node, pod string
	state     string // the pod's phase and why
	after     time.Duration
	ended     bool
}

func (e *podStartError) Error() string {
	if e.ended {
		return fmt.Sprintf("node %s: probe pod %s ended: %s", e.node, e.pod, e.state)
	}
	return fmt.Sprintf("node %s: probe pod %s did not run within %s of its kubelet taking it up (%s)", e.node, e.pod, roundOff(e.after), e.state)
}

// roundOff is a deadline for people: to the second, below one to the millisecond.
func roundOff(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// notAskedError is a call not made, since its node failed before in this run.
type notAskedError struct {
	what  string
	cause error
}

func (e *notAskedError) Error() string {
	var u *unansweredError
	if errors.As(e.cause, &u) {
		// The call it did not answer is named once, where it failed.
		if u.started {
			return fmt.Sprintf("%s not asked: on node %s a call did not end within %s before", e.what, u.node, roundOff(u.after))
		}
		return fmt.Sprintf("%s not asked: node %s did not answer within %s before", e.what, u.node, roundOff(u.after))
	}
	return fmt.Sprintf("%s not asked: %v", e.what, e.cause)
}

func (e *notAskedError) Unwrap() error { return e.cause }

// nodeFailed says whether err is a node's failure rather than what a probe found.
func nodeFailed(err error) bool {
	var u *unansweredError
	var r *notReadyError
	var p *podStartError
	return errors.As(err, &u) || errors.As(err, &r) || errors.As(err, &p)
}

// failNode records why node is asked nothing more in this run (the first reason stays).
func (m *member) failNode(node string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed == nil {
		m.failed = map[string]error{}
	}
	if _, ok := m.failed[node]; !ok {
		m.failed[node] = err
	}
}

// nodeError is why node is asked nothing more, nil while it answers.
func (m *member) nodeError(node string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed[node]
}

// failedNodes are the nodes asked nothing more, sorted.
func (m *member) failedNodes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.failed {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// onNode runs call, which reaches node through the API server and its kubelet (what
// names it for errors). The kubelet must take it up (call's answered) within the node
// timeout; then call has runs, its own longest run, and the node timeout again to end. A
// call that misses either is given up (its goroutine left to end when its context does;
// call must heed ctx) and the node recorded as not answering. A call that cannot tell
// when it was taken up (a log read) never calls answered: the node timeout bounds it all.
func onNode[T any](ctx context.Context, m *member, node, what string, runs time.Duration, call func(ctx context.Context, answered func()) (T, error)) (T, error) {
	var zero T
	if err := m.nodeError(node); err != nil {
		return zero, &notAskedError{what: what, cause: err}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	taken := make(chan struct{})
	var once sync.Once
	answered := func() { once.Do(func() { close(taken) }) }
	go func() {
		v, err := call(cctx, answered)
		done <- result{v, err}
	}()
	to := m.timeouts
	if to.node <= 0 {
		to = defaultTimeouts()
	}
	timer := time.NewTimer(to.node)
	defer timer.Stop()
	started := false
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-taken:
			taken, started = nil, true
			timer.Reset(runs + to.node)
		case <-timer.C:
			after := to.node
			if started {
				after += runs
			}
			err := &unansweredError{node: node, what: what, after: after, started: started}
			if !started {
				err.what += ", through the API server and the node's kubelet"
			}
			m.failNode(node, err)
			return zero, err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// checkNodes is the line of a member whose nodes did not all answer; it is not a check
// to choose: it is printed, first, whenever a node failed.
const checkNodes = "nodes"

// nodeResults are a failed "nodes" line for each member with a node that did not answer
// in time, is not Ready, or did not run its probe pod.
func nodeResults(members []*member, t timeouts) []Result {
	var out []Result
	for _, m := range members {
		nodes := m.failedNodes()
		if len(nodes) == 0 {
			continue
		}
		var details, fixes []string
		hung := false
		for _, n := range nodes {
			err := m.nodeError(n)
			details = append(details, err.Error())
			var p *podStartError
			if errors.As(err, &p) {
				fixes = appendNew(fixes, fmt.Sprintf("kubectl -n %s describe pod %s: its events say why it does not run", straitv1.SystemNamespace, p.pod))
			} else {
				hung = true
			}
		}
		if hung {
			fixes = append([]string{hungNodeFix(nodes, t, true)}, fixes...)
		}
		out = append(out, Result{Check: checkNodes, Cluster: m.name, Status: Fail,
			Detail: strings.Join(details, "; ") + "; the other checks ran without " + plural(nodes, "this node", "these nodes"),
			Fix:    strings.Join(fixes, "; ")})
	}
	return out
}

// hungNodeFix says what to do about nodes that do not answer; podStart: the command
// has --pod-start-timeout.
func hungNodeFix(nodes []string, t timeouts, podStart bool) string {
	longer := fmt.Sprintf("--node-timeout (now %s)", t.node)
	if podStart {
		longer += fmt.Sprintf(", --pod-start-timeout (now %s)", t.podStart)
	}
	return fmt.Sprintf("kubectl get node %s -o wide, and kubectl describe node: is it Ready, when did its kubelet last post its status? "+
		"Then, on the node, the kubelet's state (systemctl status kubelet; journalctl -u kubelet): a stopped kubelet, or a node whose disk or kernel froze, "+
		"answers no exec and starts no pod, and Strait's agent there may be stuck as well (strait show gateways). "+
		"If the node is only slow, give it longer: %s", strings.Join(nodes, " "), longer)
}

func plural(list []string, one, many string) string {
	if len(list) == 1 {
		return one
	}
	return many
}

// describe names a command line for messages: its first three words, the binary's
// directory left out ("straitd probe node").
func describe(argv []string) string {
	words := argv[:min(3, len(argv))]
	out := make([]string, len(words))
	copy(out, words)
	if len(out) > 0 {
		out[0] = strings.TrimPrefix(out[0], "/")
	}
	return strings.Join(out, " ")
}
