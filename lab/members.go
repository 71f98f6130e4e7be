package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/lab/topology"
)

// DNSServiceName is the cluster DNS Service in kube-system, as kubeadm names it.
const DNSServiceName = "kube-dns"

// corefile is the cluster DNS configuration the lab starts with. strait dns adds its
// marked stanza to the same ConfigMap; the lab daemon copies it to disk, and CoreDNS's
// reload plugin picks it up.
func corefile(kubeconfig, context string) string {
	return fmt.Sprintf(`.:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
    reload 2s
}
`, kubeconfig, context)
}

// ensureClusterDNS creates the coredns ConfigMap, the kube-dns Service with the cluster
// DNS IP and an EndpointSlice pointing at CoreDNS in the control-plane namespace, writes
// the Corefile and starts CoreDNS there: in every member, and in the hub, where Flux's
// controllers find each other by Service name.
func (l *Lab) ensureClusterDNS(ctx context.Context, cp topology.ControlPlane, dnsIP netip.Addr, client kubernetes.Interface) error {
	cfg := corefile(l.state.InNamespaceKubeconfig(cp.Cluster), "strait-lab-"+cp.Cluster)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Data: map[string]string{"Corefile": cfg}}
	if _, err := client.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := os.Stat(l.corefilePath(cp.Cluster)); err != nil {
		if err := writeAtomic(l.corefilePath(cp.Cluster), []byte(cfg)); err != nil {
			return err
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DNSServiceName, Namespace: "kube-system",
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{ClusterIP: dnsIP.String(), Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
		}},
	}
	// Get first: a second Create fails on the taken ClusterIP before the name is checked.
	if _, err := client.CoreV1().Services("kube-system").Get(ctx, DNSServiceName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err != nil {
		return err
	}
	// CoreDNS's address of the Service's family: IPv6 in an IPv6-only cluster.
	addr, addrType := cp.LANAddr.Addr().String(), discoveryv1.AddressTypeIPv4
	if dnsIP.Is6() {
		addr, addrType = cp.LANAddr6.Addr().String(), discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-lab", Namespace: "kube-system", Labels: map[string]string{
			discoveryv1.LabelServiceName: DNSServiceName, discoveryv1.LabelManagedBy: "strait-lab"}},
		AddressType: addrType,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolTCP)},
		},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return l.ensureProcess(cp.Cluster, "coredns", cp.Namespace, l.opts.CoreDNS, "-conf", l.corefilePath(cp.Cluster))
}

// ensureKubeProxy starts kube-proxy on every node, in the cluster's mode.
func (l *Lab) ensureKubeProxy(c topology.Cluster) error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, l.ensureKubeProxyOn(c.Name, n, l.state.LANKubeconfig(c.Name), c.PodCIDRs(), c.Shape.KubeProxyMode))
	}
	return errors.Join(errs...)
}

// ensureKubeProxyOn starts kube-proxy in mode (nftables or iptables) on one node of
// cluster: on the hub's node too, whose pods (strait hub) reach their API server at its
// ClusterIP. On a dual-stack node (two cluster CIDRs, a LAN address of each family) it
// proxies both families.
func (l *Lab) ensureKubeProxyOn(cluster string, n topology.Node, kubeconfig string, clusterCIDRs []netip.Prefix, mode string) error {
	nodePorts := []netip.Prefix{n.LANAddr.Masked()}
	switch {
	case n.IPv6Only():
		nodePorts = []netip.Prefix{n.LANAddr6.Masked()}
	case n.LANAddr6.IsValid():
		nodePorts = append(nodePorts, n.LANAddr6.Masked())
	}
	return l.ensureProcess(cluster, "kube-proxy-"+n.Name, n.Namespace, l.opts.bin("kube-proxy"),
		"--kubeconfig", kubeconfig, "--hostname-override", n.Name,
		"--proxy-mode", mode, "--cluster-cidr", prefixesFlag(clusterCIDRs),
		"--conntrack-max-per-core", "0", "--conntrack-tcp-timeout-established", "0", "--conntrack-tcp-timeout-close-wait", "0",
		"--metrics-bind-address", "127.0.0.1:10249", "--healthz-bind-address", "127.0.0.1:10256",
		"--nodeport-addresses", prefixesFlag(nodePorts))
}

// prefixesFlag is a comma-separated flag value, as Kubernetes' dual-stack flags take it
// (the primary family first).
func prefixesFlag(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
