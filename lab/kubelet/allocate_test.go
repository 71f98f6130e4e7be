package kubelet

import (
	"errors"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/straitnet/strait/lab/topology"
)

func TestAllocate(t *testing.T) {
	cidr := netip.MustParsePrefix("10.8.1.0/29") // .1 gateway, .2-.6 pods, .7 broadcast
	k := New(Config{Node: topology.Node{PodCIDR: cidr, PodGateway: netip.MustParseAddr("10.8.1.1")}})
	pod := func(uid, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Status: corev1.PodStatus{PodIP: ip}}
	}
	steps := []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod("a", ""), "10.8.1.2"},
		{pod("b", "10.8.1.5"), "10.8.1.5"}, // a pod keeps the IP it reports (kubelet restart)
		{pod("c", "10.8.1.5"), "10.8.1.3"}, // ... unless another pod holds it
		{pod("a", ""), "10.8.1.2"},         // a pod whose namespace is remade keeps its address
		{pod("d", "10.9.0.7"), "10.8.1.4"}, // an IP outside the node's CIDR is not kept
		{pod("e", ""), "10.8.1.6"},
	}
	for i, s := range steps {
		got, err := k.allocate(s.pod)
		if err != nil || got.String() != s.want {
			t.Fatalf("step %d: allocate(%s) = %v, %v; want %s", i, s.pod.UID, got, err, s.want)
		}
	}
	if _, err := k.allocate(pod("f", "")); !errors.Is(err, errNoIP) {
		t.Fatalf("full CIDR: err = %v, want errNoIP", err)
	}
}

func TestResolvConf(t *testing.T) {
	got := string(resolvConf(netip.MustParseAddr("10.88.0.10"), "sample"))
	want := "nameserver 10.88.0.10\nsearch sample.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
	if got != want {
		t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, want)
	}
}
