package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

const (
	kubeletVersion = "v1.37.1"
	// clustersetURL is c2's whereami-cs as c1's pods reach it (c1 runs it too: the
	// answer may come from either; the test asks until c2 answers).
	clustersetURL = "http://whereami-cs.sample.svc.clusterset.local/"
)

// TestEveryNodeIsARealReadyNodeRunningTheSamples checks what kubectl get nodes and pods
// would show: every node of the topology (the hub's too) registered by a kubelet on
// containerd and Ready, and every sample pod Running and Ready from a local image.
func TestEveryNodeIsARealReadyNodeRunningTheSamples(t *testing.T) {
	env.Require(t)
	t.Logf("lab up with real nodes: %s", env.UpTime.Round(100*time.Millisecond))
	ctx := context.Background()
	if env.Topo.HubNode == nil {
		t.Fatal("the lab has a hub but no hub node")
	}
	checkNodes(t, "hub", []topology.Node{*env.Topo.HubNode})
	for _, c := range env.Topo.Clusters {
		checkNodes(t, c.Name, c.Nodes)
		cs := env.HostClient(t, c.Name)
		// The sample workloads' pods, not those the tests before this one pinned to
		// nodes in the same namespace (labtest's PodOn: app=e2e-<image>).
		pods, err := cs.CoreV1().Pods(lab.SampleNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app in (" + strings.Join([]string{lab.WhereamiCS, lab.WhereamiSS, lab.Client, lab.IPerf3}, ",") + ")"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 6 {
			t.Errorf("%s: %d sample pods, want 6 (whereami-cs ×2, whereami ×2, client, iperf3)", c.Name, len(pods.Items))
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || lab.PodReady(&p) != "Ready" {
				t.Errorf("%s: pod %s is %s/%s", c.Name, p.Name, p.Status.Phase, lab.PodReady(&p))
				continue
			}
			for _, st := range p.Status.ContainerStatuses {
				if !strings.HasPrefix(st.Image, "docker.io/strait-lab/") || st.ImageID == "" || st.ContainerID == "" {
					t.Errorf("%s: pod %s container %s runs image %q (id %q, container %q), want a local strait-lab image",
						c.Name, p.Name, st.Name, st.Image, st.ImageID, st.ContainerID)
				}
			}
		}
	}
}

// TestKubectlExecReachesTheOtherClusterAndKubectlLogsShowsTheRequest runs curl in c1's
// client pod with kubectl exec, as a person would, until whereami in c2 answers through
// the ClusterSet's DNS name; the answer names c2 and sees the client's own pod address;
// kubectl logs of the answering pod shows the request from that address.
func TestKubectlExecReachesTheOtherClusterAndKubectlLogsShowsTheRequest(t *testing.T) {
	env.Require(t)
	client := env.SamplePods(t, "c1", lab.Client)
	if len(client) != 1 {
		t.Fatalf("c1: %d client pods, want 1", len(client))
	}
	run := func(cluster string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := kubectl(ctx, t, cluster, args...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	var answer workload.Answer
	require.Eventually(t, time.Minute, "c1's client reaching whereami-cs in c2 by kubectl exec", func() error {
		out, err := run("c1", "exec", client[0].Name, "--", "curl", "-sS", "-m", "3", clustersetURL)
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			return fmt.Errorf("curl answered %q: %w", out, err)
		}
		if answer.Cluster != "c2" {
			return fmt.Errorf("answered by cluster %q (pod %s)", answer.Cluster, answer.Pod)
		}
		return nil
	})
	if answer.Caller != client[0].Status.PodIP {
		t.Errorf("whereami in c2 saw the caller %s, want c1's client pod %s (unNATed)", answer.Caller, client[0].Status.PodIP)
	}
	want := "GET / HTTP/1.1 from " + client[0].Status.PodIP + ":"
	require.Eventually(t, 10*time.Second, "the request in kubectl logs of "+answer.Pod, func() error {
		out, err := run("c2", "logs", answer.Pod)
		if err != nil {
			return err
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("log lacks %q:\n%s", want, out)
		}
		return nil
	})
}

// TestLabExecRunsInThePodThroughTheAPIServer runs "strait lab exec" as a person would: on
// real nodes it is the API server's exec, so the command runs in the pod's own
// filesystem (the tools image's dig) with the pod's resolv.conf.
func TestLabExecRunsInThePodThroughTheAPIServer(t *testing.T) {
	env.Require(t)
	ip := env.ClusterSetIP(t, "c1", lab.WhereamiCS)
	require.Eventually(t, 30*time.Second, "dig in c1's client by strait lab exec", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, env.Strait, "lab", "exec", "--state", env.Lab.State().Dir, "c1", "sample/client", "--",
			"dig", "+short", "whereami-cs.sample.svc.clusterset.local").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != ip {
			return fmt.Errorf("dig answered %q, want whereami-cs's clusterset IP in c1, %s", got, ip)
		}
		return nil
	})
	// As kubectl exec: the command's exit status is lab exec's.
	err := exec.Command(env.Strait, "lab", "exec", "--state", env.Lab.State().Dir, "c1", "sample/client", "--", "sh", "-c", "exit 3").Run()
	var exited *exec.ExitError
	if !errors.As(err, &exited) || exited.ExitCode() != 3 {
		t.Errorf("strait lab exec of 'exit 3': %v, want exit status 3", err)
	}
}

// checkNodes fails the test for every wanted node not registered by a real kubelet, not
// Ready or not on its pod CIDR.
func checkNodes(t *testing.T, cluster string, wanted []topology.Node) {
	t.Helper()
	if err := nodeProblems(t, cluster, wanted); err != nil {
		t.Error(err)
	}
}

// nodeProblems says which of the wanted nodes is not registered by a real kubelet, not
// Ready or not on its pod CIDR.
func nodeProblems(t *testing.T, cluster string, wanted []topology.Node) error {
	t.Helper()
	nodes, err := env.HostClient(t, cluster).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	got := map[string]corev1.Node{}
	for _, n := range nodes.Items {
		got[n.Name] = n
	}
	var errs []error
	for _, want := range wanted {
		n, ok := got[want.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: node %s is not registered", cluster, want.Name))
		case lab.NodeReady(&n) != "Ready":
			errs = append(errs, fmt.Errorf("%s: node %s is %s", cluster, n.Name, lab.NodeReady(&n)))
		case !strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://"),
			n.Status.NodeInfo.KubeletVersion != kubeletVersion:
			errs = append(errs, fmt.Errorf("%s: node %s runs %q with kubelet %q, want containerd and kubelet %s", cluster, n.Name,
				n.Status.NodeInfo.ContainerRuntimeVersion, n.Status.NodeInfo.KubeletVersion, kubeletVersion))
		case n.Spec.PodCIDR != want.PodCIDR.String():
			errs = append(errs, fmt.Errorf("%s: node %s has pod CIDR %q, want %s", cluster, n.Name, n.Spec.PodCIDR, want.PodCIDR))
		}
	}
	return errors.Join(errs...)
}

// TestUpAgainRestartsANodeWhoseDaemonDied: the kubelet, then containerd, of a node is
// killed; "lab up" again, as after any crash, starts the node afresh and its sample
// pods are Ready again.
func TestUpAgainRestartsANodeWhoseDaemonDied(t *testing.T) {
	env.Require(t)
	n := env.Topo.Clusters[0].Nodes[len(env.Topo.Clusters[0].Nodes)-1]
	cs := env.HostClient(t, "c1")
	for _, daemon := range []string{"kubelet", "containerd"} {
		t.Run(daemon, func(t *testing.T) {
			pid := labtest.DaemonPid(n.Namespace, daemon)
			if pid == 0 {
				t.Fatalf("no %s runs in %s", daemon, n.Namespace)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Gone before "lab up" again, as when a person runs it after a crash: one
			// dying while up runs is reported as exited, which is right.
			require.Eventually(t, 10*time.Second, daemon+" gone", func() error {
				if netns.Alive(pid) {
					return fmt.Errorf("pid %d still runs", pid)
				}
				return nil
			})
			env.UpAgain(t)
			if again := labtest.DaemonPid(n.Namespace, daemon); again == 0 || again == pid {
				t.Fatalf("after lab up again, the %s in %s is pid %d (killed: %d), want a new one", daemon, n.Namespace, again, pid)
			}
			require.Eventually(t, 2*time.Minute, n.Name+" Ready with its sample pods running again", func() error {
				if err := nodeProblems(t, "c1", []topology.Node{n}); err != nil {
					return err
				}
				pods, err := cs.CoreV1().Pods(lab.SampleNamespace).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
				if err != nil {
					return err
				}
				for _, p := range pods.Items {
					if lab.PodReady(&p) != "Ready" {
						return fmt.Errorf("pod %s is %s", p.Name, lab.PodReady(&p))
					}
				}
				return nil
			})
		})
	}
}

// kubectl is the kubectl built with the control plane (make k8s-binaries, of its
// version) on cluster's kubeconfig in the sample namespace.
func kubectl(ctx context.Context, t *testing.T, cluster string, args ...string) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(env.K8sBin, "kubectl")
	if _, err := os.Stat(bin); err != nil {
		require.Skip(t, "no kubectl (make k8s-binaries): %v", err)
	}
	argv := append([]string{"--kubeconfig", env.Lab.State().KubeconfigPath(cluster), "-n", lab.SampleNamespace}, args...)
	return exec.CommandContext(ctx, bin, argv...)
}

// TestKubectlPortForwardReachesAPod: kubectl port-forward to one of c2's whereami pods
// (through the API server and the pod's kubelet) answers on the host's loopback, and the
// answer comes from that pod.
func TestKubectlPortForwardReachesAPod(t *testing.T) {
	env.Require(t)
	pods := env.SamplePods(t, "c2", lab.WhereamiCS)
	if len(pods) == 0 {
		t.Fatal("c2: no whereami-cs pod")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := kubectl(ctx, t, "c2", "port-forward", "--address", "127.0.0.1", "pod/"+pods[0].Name, ":8080")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// "Forwarding from 127.0.0.1:40123 -> 8080"
	line, err := bufio.NewReader(out).ReadString('\n')
	local, _, found := strings.Cut(strings.TrimPrefix(line, "Forwarding from "), " ->")
	if err != nil || !found {
		t.Fatalf("kubectl port-forward said %q (%v), stderr %q", line, err, stderr.String())
	}
	resp, err := http.Get("http://" + local + "/")
	if err != nil {
		t.Fatalf("GET through the port-forward at %s: %v (kubectl: %s)", local, err, stderr.String())
	}
	defer func() { _ = resp.Body.Close() }()
	var answer workload.Answer
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	if answer.Cluster != "c2" || answer.Pod != pods[0].Name {
		t.Errorf("port-forward to %s answered by %s/%s", pods[0].Name, answer.Cluster, answer.Pod)
	}
}
