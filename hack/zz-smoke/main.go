package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	env := &envtest.Environment{CRDDirectoryPaths: []string{"kustomize/crd/bases", "kustomize/crd/mcs"}}
	cfg, err := env.Start()
	if err != nil {
		panic(err)
	}
	defer env.Stop()
	u, _ := env.AddUser(envtest.User{Name: "x", Groups: []string{"system:masters"}}, nil)
	kc, _ := u.KubeConfig()
	_ = os.WriteFile("/tmp/smoke-kubeconfig", kc, 0o600)
	c, _ := client.New(cfg, client.Options{})
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strait-system"}}))
	must(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"},
		Data: map[string]string{"Corefile": ".:53 {\n    forward . /etc/resolv.conf\n    reload\n}\n"}}))
	must(c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "strait-system", Name: "strait-dns"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}))
	cmd := exec.Command("bin/strait", "dns", "--listen", "127.0.0.1:15353", "--kubeconfig", "/tmp/smoke-kubeconfig", "--metrics-addr", "127.0.0.1:19253", "--coredns-resync", "2s")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	must(cmd.Start())
	time.Sleep(6 * time.Second)
	out, _ := exec.Command("sh", "-c", "curl -s 127.0.0.1:19253/readyz; curl -s 127.0.0.1:19253/metrics | grep '^strait_dns'").CombinedOutput()
	fmt.Println(string(out))
	var cm corev1.ConfigMap
	must(c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm))
	fmt.Printf("--- Corefile after strait dns:\n%s", cm.Data["Corefile"])
	// Someone removes it; it comes back.
	cm.Data["Corefile"] = ".:53 {\n    forward . /etc/resolv.conf\n    reload\n}\n"
	must(c.Update(ctx, &cm))
	time.Sleep(4 * time.Second)
	must(c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm))
	fmt.Printf("--- Corefile after a person removed our block, 4 s later:\n%s", cm.Data["Corefile"])
	_ = cmd.Process.Signal(os.Interrupt)
	fmt.Println("exit:", cmd.Wait())
	cl := exec.Command("bin/strait", "dns", "--cleanup", "--kubeconfig", "/tmp/smoke-kubeconfig")
	cl.Stdout, cl.Stderr = os.Stdout, os.Stderr
	fmt.Println("cleanup:", cl.Run())
	must(c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm))
	fmt.Printf("--- Corefile after --cleanup:\n%s", cm.Data["Corefile"])
}
