package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startRecorded starts argv as component cluster/name with its pid file and log, as
// ensureProcess does, and reaps it when the test ends.
func startRecorded(t *testing.T, l *Lab, cluster, name, log string, argv ...string) *exec.Cmd {
	t.Helper()
	if err := os.MkdirAll(l.state.ClusterDir(cluster)+"/logs", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.state.LogPath(cluster, name), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := l.state.WritePid(cluster, name, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// A component that dies while "lab up" waits ends the wait at once, and the error names
// the component, its log and the log's last lines; a pid file an earlier run left behind
// for a process long gone does not.
func TestUpStopsWhenAComponentExits(t *testing.T) {
	l := New(Options{StateDir: t.TempDir()})
	stale := startRecorded(t, l, "c1", "kube-scheduler", "old run\n", "true")
	_ = stale.Wait()
	startRecorded(t, l, "c1", "kube-apiserver", "serving\n", "sleep", "60")

	ctx, stop := l.watchComponents(context.Background())
	defer stop()
	log := "I0101 starting\nE0101 could not find nftables binary: exec: \"nft\"\n"
	proxy := startRecorded(t, l, "c1", "kube-proxy-c1-worker", log, "sleep", "60")
	select {
	case <-ctx.Done():
		t.Fatalf("stopped before any component exited: %v", context.Cause(ctx))
	case <-time.After(time.Second):
	}
	_ = proxy.Process.Kill()
	_ = proxy.Wait()

	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("kube-proxy exited and the wait went on")
	}
	err := exitCause(ctx, context.Canceled)
	var exited *ComponentExited
	if !errors.As(err, &exited) || exited.Component != "c1/kube-proxy-c1-worker" {
		t.Fatalf("got %v, want kube-proxy named", err)
	}
	for _, want := range []string{l.state.LogPath("c1", "kube-proxy-c1-worker"), `could not find nftables binary: exec: "nft"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not carry %q:\n%v", want, err)
		}
	}
}

func TestNotReadyNamesTheCause(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "whereami-0"}, Spec: corev1.PodSpec{NodeName: "c1-worker"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "whereami", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ErrImageNeverPull", Message: `image "strait-lab/whereami:dev" is not present`}}}}}},
	}
	got := notReady(pods)
	want := `
  pod whereami-0: Pending on node "c1-worker"; container whereami waiting: ErrImageNeverPull image "strait-lab/whereami:dev" is not present`
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
