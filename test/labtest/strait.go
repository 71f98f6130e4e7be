package labtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/require"
)

// Strait's workloads, by their app.kubernetes.io/name label (kustomize/).
const (
	AgentApp = "strait-agent"
	HubApp   = "strait-hub"
	DNSApp   = "strait-dns"
)

// StraitPods are the pods of one of Strait's workloads in a cluster (or the hub), on
// node when node is not empty.
func (e *Env) StraitPods(t testing.TB, cluster, app, node string) []corev1.Pod {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + app}
	if node != "" {
		opts.FieldSelector = "spec.nodeName=" + node
	}
	pods, err := e.HostClient(t, cluster).CoreV1().Pods(straitv1.SystemNamespace).List(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// AgentPod is the ready agent pod on a node.
func (e *Env) AgentPod(t testing.TB, cluster, node string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	require.Eventually(t, time.Minute, cluster+": a ready agent on "+node, func() error {
		pods := e.StraitPods(t, cluster, AgentApp, node)
		for _, p := range pods {
			if lab.PodReady(&p) == "Ready" && p.DeletionTimestamp == nil {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("%d agent pods, none ready", len(pods))
	})
	return pod
}

// Restarts is how often a container of a pod has restarted (-1 when it has no status).
func Restarts(p corev1.Pod, container string) int32 {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == container {
			return st.RestartCount
		}
	}
	return -1
}

// SignalContainer sends sig to a container's first process, as a crash (SIGKILL) or the
// kubelet stopping it (SIGTERM) would; the kubelet restarts it (restartPolicy Always).
func (e *Env) SignalContainer(t testing.TB, p corev1.Pod, container string, sig syscall.Signal) {
	t.Helper()
	pid, err := e.Lab.ContainerPid(context.Background(), &p, container)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("%s of pod %s/%s (pid %d): %v", sig, p.Namespace, p.Name, pid, err)
	}
}

// WaitRestarted waits until a container of a pod has restarted since it counted before
// and the pod is ready again.
func (e *Env) WaitRestarted(t testing.TB, cluster string, p corev1.Pod, container string, before int32, timeout time.Duration) {
	t.Helper()
	pods := e.HostClient(t, cluster).CoreV1().Pods(p.Namespace)
	require.Eventually(t, timeout, fmt.Sprintf("%s: %s of %s restarted and ready", cluster, container, p.Name), func() error {
		got, err := pods.Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n := Restarts(*got, container); n <= before {
			return fmt.Errorf("restarts %d, want > %d", n, before)
		}
		if lab.PodReady(got) != "Ready" {
			return fmt.Errorf("pod %s", lab.PodReady(got))
		}
		return nil
	})
}

// ContainerStarted is when the kubelet last started a container of a pod (to the second,
// as the API gives it).
func (e *Env) ContainerStarted(t testing.TB, cluster string, p corev1.Pod, container string) time.Time {
	t.Helper()
	got, err := e.HostClient(t, cluster).CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range got.Status.ContainerStatuses {
		if st.Name == container && st.State.Running != nil {
			return st.State.Running.StartedAt.Time
		}
	}
	t.Fatalf("%s: container %s of %s is not running", cluster, container, p.Name)
	return time.Time{}
}

// StraitLogs are the last lines of a container's log in every pod of one of Strait's
// workloads, for a failing test to show (kubectl logs).
func (e *Env) StraitLogs(t testing.TB, cluster, app, container string, lines int64) string {
	t.Helper()
	var b strings.Builder
	for _, p := range e.StraitPods(t, cluster, app, "") {
		raw, err := e.HostClient(t, cluster).CoreV1().Pods(p.Namespace).GetLogs(p.Name,
			&corev1.PodLogOptions{Container: container, TailLines: &lines}).DoRaw(context.Background())
		fmt.Fprintf(&b, "== %s/%s %s (%v)\n%s\n", p.Namespace, p.Name, container, err, raw)
	}
	return b.String()
}

// PauseKubelet stops a node's kubelet (SIGSTOP) until the returned function resumes it
// (also at the end of the test): the node's containers keep running, but one that exits
// stays down, as on a node whose kubelet is wedged. A failover test uses it so that the
// kubelet does not restart the stopped agent before the other gateway has taken over.
func (e *Env) PauseKubelet(t testing.TB, cluster, node string) (resume func()) {
	t.Helper()
	return e.pause(t, cluster, "kubelet-"+node)
}

// PauseAPIServer stops a cluster's kube-apiserver (SIGSTOP) until the returned function
// resumes it (also at the end of the test): its connections stay open and its requests
// wait, as against an API server that answers slowly; what was asked meanwhile is
// answered on resume.
func (e *Env) PauseAPIServer(t testing.TB, cluster string) (resume func()) {
	t.Helper()
	return e.pause(t, cluster, "kube-apiserver")
}

// pause stops one of the lab's processes until resume.
func (e *Env) pause(t testing.TB, cluster, process string) (resume func()) {
	t.Helper()
	pid, ok := e.Lab.State().Pid(cluster, process)
	if !ok {
		t.Fatalf("%s: no %s running", cluster, process)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// DaemonPid is the pid of the named program (kubelet, containerd, kube-proxy) running
// in a node's namespace, or 0.
func DaemonPid(ns, name string) int {
	for _, pid := range netns.Pids(ns) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if filepath.Base(strings.Split(string(cmd), "\x00")[0]) == name {
			return pid
		}
	}
	return 0
}
