package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/node"
)

// ComponentExited is why "lab up" stopped early: a process it started is gone.
type ComponentExited struct {
	// Component is "cluster/name", e.g. "c1/kube-proxy-c1-worker".
	Component string
	// Log is the component's log file; Tail its last lines.
	Log  string
	Tail string
}

func (e *ComponentExited) Error() string {
	return fmt.Sprintf("%s exited; the end of its log %s:\n%s", e.Component, e.Log, e.Tail)
}

// hostTools are what "lab up" runs on the host before anything else: it refuses at once
// without them rather than waiting on a component that cannot start (kube-proxy in
// nftables mode dies without nft).
var hostTools = [][2]string{{"ip", "iproute2"}, {"nft", "nftables"}, {"unshare", "util-linux"}}

func checkHostTools() error {
	var missing []string
	for _, t := range hostTools {
		if _, err := exec.LookPath(t[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", t[0], t[1]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing host tools: %s; run 'make host-deps' as root to install them", strings.Join(missing, ", "))
	}
	return nil
}

// watchComponents returns a context that is cancelled, with a *ComponentExited cause, as
// soon as a process the lab started exits. Pid files left by an earlier run whose
// process is already gone are ignored until "up" starts that component again.
func (l *Lab) watchComponents(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stale := map[string]int{}
	for key, pid := range l.state.AllPids() {
		if !netns.Alive(pid) {
			stale[key] = pid
		}
	}
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := l.exitedComponent(stale); err != nil {
				cancel(err)
				return
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// exitedComponent is the first component (in name order) whose recorded process is gone.
func (l *Lab) exitedComponent(stale map[string]int) error {
	pids := l.state.AllPids()
	for _, key := range slices.Sorted(maps.Keys(pids)) {
		pid := pids[key]
		if netns.Alive(pid) || stale[key] == pid {
			continue
		}
		cluster, name, _ := strings.Cut(key, "/")
		log := l.state.LogPath(cluster, name)
		return &ComponentExited{Component: key, Log: log, Tail: node.Tail(log, 12)}
	}
	return nil
}

// exitCause prefers a component's exit over the error it caused in a wait.
func exitCause(ctx context.Context, err error) error {
	var exited *ComponentExited
	if cause := context.Cause(ctx); errors.As(cause, &exited) {
		return exited
	}
	return err
}

// notReady says, a line per pod, why each pod that is not ready is not: its phase, its
// node, and the condition or container state that holds it back.
func notReady(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		if PodReady(&p) == "Ready" {
			continue
		}
		fmt.Fprintf(&b, "\n  pod %s: %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
				fmt.Fprintf(&b, "; %s: %s %s", c.Type, c.Reason, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				fmt.Fprintf(&b, "; container %s waiting: %s %s", cs.Name, w.Reason, w.Message)
			}
			if x := cs.State.Terminated; x != nil {
				fmt.Fprintf(&b, "; container %s terminated: %s (exit %d) %s", cs.Name, x.Reason, x.ExitCode, x.Message)
			}
		}
	}
	return b.String()
}
