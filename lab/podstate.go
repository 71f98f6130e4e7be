package lab

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// unreadyPods says, for each pod of a namespace that is not Ready, what `kubectl get pods`
// and `kubectl describe pod` would show a user: its phase, each waiting container's
// reason, the restarts, and the last termination's reason, exit code and message (the
// log's tail, with terminationMessagePolicy FallbackToLogsOnError). It is what a timeout
// prints, so that a run whose state directory is gone still says why.
func unreadyPods(ctx context.Context, c kubernetes.Interface, ns string) []string {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"listing pods: " + err.Error()}
	}
	var out []string
	for i := range pods.Items {
		if s := describeUnready(&pods.Items[i]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// describeUnready is one line on a pod that is not Ready, or "" for a Ready one.
func describeUnready(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	parts := []string{fmt.Sprintf("pod %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			parts = append(parts, "unscheduled: "+c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		s := fmt.Sprintf("container %s ready=%t restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		if w := cs.State.Waiting; w != nil {
			s += " waiting: " + w.Reason
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			s += fmt.Sprintf(" last exit %d (%s): %s", t.ExitCode, t.Reason, lastLines(t.Message, 3))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
