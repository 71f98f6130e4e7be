package lab

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/straitnet/strait/lab/node"
)

// ExecIn runs argv in the first container of a pod (NAME, NAMESPACE/NAME or a
// Deployment's name when it has one pod) through the API server and the pod's kubelet,
// as kubectl exec does. A command that exits non-zero is an error naming its status.
func (l *Lab) ExecIn(ctx context.Context, cluster, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	p, _, err := l.findPod(ctx, cluster, pod)
	if err != nil {
		return err
	}
	// Through the host's forwarder: the exec stream's dialer ignores a config's Dial.
	cfg, err := clientcmd.BuildConfigFromFlags("", l.state.KubeconfigPath(cluster))
	if err != nil {
		return err
	}
	streams := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if err := node.Exec(ctx, cfg, p.Namespace, p.Name, p.Spec.Containers[0].Name, argv, streams); err != nil {
		return fmt.Errorf("exec in %s/%s of cluster %s: %w", p.Namespace, p.Name, cluster, err)
	}
	return nil
}

// ContainerPid is the host pid of a container's first process in a running pod, asked
// from the runc of the pod's node: tests signal Strait's daemons through it as a crash
// or the kubelet would.
func (l *Lab) ContainerPid(ctx context.Context, p *corev1.Pod, container string) (int, error) {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != container {
			continue
		}
		_, id, ok := strings.Cut(st.ContainerID, "://")
		if !ok || st.State.Running == nil {
			return 0, fmt.Errorf("pod %s/%s: container %s is not running (%q)", p.Namespace, p.Name, container, st.ContainerID)
		}
		return node.ContainerPid(ctx, l.state.nodeDir(p.Spec.NodeName), l.opts.NodeBin, id)
	}
	return 0, fmt.Errorf("pod %s/%s has no container %s", p.Namespace, p.Name, container)
}

// PodNetNS is what enters a pod's network namespace from the host: /proc/<pid>/ns/net
// of its first container (the container's files, such as its resolv.conf, are under
// /proc/<pid>/root).
func (l *Lab) PodNetNS(ctx context.Context, cluster string, p *corev1.Pod) (string, error) {
	if len(p.Status.ContainerStatuses) == 0 {
		return "", fmt.Errorf("pod %s/%s in %s has no running container yet", p.Namespace, p.Name, cluster)
	}
	pid, err := l.ContainerPid(ctx, p, p.Status.ContainerStatuses[0].Name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/proc/%d/ns/net", pid), nil
}

// SampleContainer is the container of a sample app ("whereami", "client", "iperf3"),
// for tests that pin their own pods.
func SampleContainer(cluster, app string) (corev1.Container, error) {
	whereami, idle, iperf3 := sampleContainers(cluster)
	switch app {
	case "whereami":
		return whereami, nil
	case Client:
		return idle, nil
	case IPerf3:
		return iperf3, nil
	}
	return corev1.Container{}, fmt.Errorf("sample app %q: want whereami, %s or %s", app, Client, IPerf3)
}
