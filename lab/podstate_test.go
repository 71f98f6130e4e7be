package lab

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A timeout names each pod that is not Ready with what `kubectl describe pod` shows: the
// node, the phase, the waiting reason, the restarts and the last exit's message (its
// last lines); a Ready pod is not named.
func TestUnreadyPodsSayWhy(t *testing.T) {
	crashing := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-hub-1", Namespace: "strait-system"},
		Spec:       corev1.PodSpec{NodeName: "hub-node"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "hub", RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error",
					Message: "line 1\nline 2\n\nline 3\nError: issuing the webhook certificate: network is unreachable\n",
				}},
			}},
		},
	}
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-hub-2", Namespace: "strait-system"},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Message: "0/1 nodes are available: 1 node(s) had untolerated taint(s)."}},
		},
	}
	ready := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-hub-3", Namespace: "strait-system"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	got := unreadyPods(context.Background(), fake.NewClientset(crashing, pending, ready), "strait-system")
	want := []string{
		`pod strait-hub-1 on "hub-node": Running, container hub ready=false restarts=4 waiting: CrashLoopBackOff last exit 1 (Error): line 2 | line 3 | Error: issuing the webhook certificate: network is unreachable`,
		`pod strait-hub-2 on "": Pending, unscheduled: 0/1 nodes are available: 1 node(s) had untolerated taint(s).`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unreadyPods:\n got %q\nwant %q", got, want)
	}
}
