package corefile_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/test/clusters"
)

var k8s client.Client

func TestMain(m *testing.M) {
	clusters.TestMain(func(cl *clusters.Cluster) int {
		c, err := client.New(cl.Config, client.Options{})
		if err != nil {
			fmt.Println(err)
			return 1
		}
		k8s = c
		return m.Run()
	})
}

const kubeadm = `.:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
    }
    forward . /etc/resolv.conf
    reload
}
`

// configMap creates a ConfigMap like kube-system/coredns, in its own namespace per test.
func configMap(t *testing.T, name, corefileText string) types.NamespacedName {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "coredns"},
		Data: map[string]string{corefile.Key: corefileText, "other": "left alone"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return types.NamespacedName{Namespace: name, Name: "coredns"}
}

func read(t *testing.T, key types.NamespacedName) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := k8s.Get(context.Background(), key, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

var zones = []string{"clusterset.local"}

func TestApplyAndCleanupOnAConfigMap(t *testing.T) {
	ctx := context.Background()
	others := "# ours since 2019\ncorp.example:53 {\n    forward . 192.0.2.53\n}\n" + kubeadm
	block := corefile.Block(zones, "10.96.0.53:53")
	for name, original := range map[string]string{"kubeadm": kubeadm, "others": others} {
		t.Run(name, func(t *testing.T) {
			key := configMap(t, "coredns-"+name, original)
			changed, err := corefile.Apply(ctx, k8s, key, block, zones)
			if err != nil || !changed {
				t.Fatalf("Apply: changed %v, err %v", changed, err)
			}
			cm := read(t, key)
			if got := cm.Data[corefile.Key]; got != block+original {
				t.Fatalf("Corefile after Apply:\n%s", got)
			}
			rv := cm.ResourceVersion
			if changed, err := corefile.Apply(ctx, k8s, key, block, zones); err != nil || changed {
				t.Fatalf("second Apply: changed %v, err %v; want no write", changed, err)
			}
			if cm := read(t, key); cm.ResourceVersion != rv || cm.Data["other"] != "left alone" {
				t.Fatalf("second Apply wrote the ConfigMap (resourceVersion %s, was %s) or touched other keys", cm.ResourceVersion, rv)
			}
			if changed, err := corefile.Cleanup(ctx, k8s, key); err != nil || !changed {
				t.Fatalf("Cleanup: changed %v, err %v", changed, err)
			}
			if got := read(t, key).Data[corefile.Key]; got != original {
				t.Fatalf("Corefile after Cleanup is not the original byte for byte:\n%q\nwant\n%q", got, original)
			}
		})
	}
}

func TestApplyOverAnOldBlockOfOurs(t *testing.T) {
	ctx := context.Background()
	old := corefile.Block(zones, "10.96.0.1:53")
	key := configMap(t, "coredns-ours", kubeadm+old)
	block := corefile.Block(zones, "10.96.0.53:53")
	if changed, err := corefile.Apply(ctx, k8s, key, block, zones); err != nil || !changed {
		t.Fatalf("Apply: changed %v, err %v", changed, err)
	}
	if got := read(t, key).Data[corefile.Key]; got != kubeadm+block {
		t.Fatalf("our old block was not replaced in place:\n%s", got)
	}
	if _, err := corefile.Cleanup(ctx, k8s, key); err != nil {
		t.Fatal(err)
	}
	if got := read(t, key).Data[corefile.Key]; got != kubeadm {
		t.Fatalf("after Cleanup:\n%s", got)
	}
}

func TestApplyRefusesAForeignClustersetBlock(t *testing.T) {
	foreign := kubeadm + "clusterset.local:53 {\n    forward . 10.96.0.77\n}\n"
	key := configMap(t, "coredns-foreign", foreign)
	if _, err := corefile.Apply(context.Background(), k8s, key, corefile.Block(zones, "10.96.0.53:53"), zones); err == nil {
		t.Fatal("Apply over another clusterset.local block: want an error")
	}
	if got := read(t, key).Data[corefile.Key]; got != foreign {
		t.Fatalf("a refused Apply changed the Corefile:\n%s", got)
	}
}

func TestCleanupWithoutConfigMap(t *testing.T) {
	if changed, err := corefile.Cleanup(context.Background(), k8s, types.NamespacedName{Namespace: "default", Name: "nothing"}); err != nil || changed {
		t.Fatalf("Cleanup of a missing ConfigMap: changed %v, err %v; want neither", changed, err)
	}
}
