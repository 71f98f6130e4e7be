package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Exec runs argv in a container of a pod through the API server and the pod's kubelet,
// as kubectl exec does, with the streams given (nil ones are not attached). A command
// that exits non-zero is an error carrying its status (client-go's exec.ExitError).
func Exec(ctx context.Context, cfg *rest.Config, namespace, pod, container string, argv []string, streams remotecommand.StreamOptions) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv,
			Stdin: streams.Stdin != nil, Stdout: streams.Stdout != nil, Stderr: streams.Stderr != nil}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, streams)
}
