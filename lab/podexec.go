package lab

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// RealNodes says whether the running lab's nodes are real (exec goes through the API
// server) rather than emulated (exec enters the pod's network namespace).
func (l *Lab) RealNodes() (bool, error) {
	r, _, err := l.Load()
	if err != nil {
		return false, err
	}
	return r.RealNodes, nil
}

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
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: p.Spec.Containers[0].Name, Command: argv,
			Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}); err != nil {
		return fmt.Errorf("exec in %s/%s of cluster %s: %w", p.Namespace, p.Name, cluster, err)
	}
	return nil
}
