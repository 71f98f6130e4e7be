package nat

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// The name c2's gateways are reached by in the DNSName case, served by a zone the test
// adds to c1's CoreDNS (the dialing side resolves it); .test is reserved (RFC 2606) and
// the lab's CoreDNS forwards nothing, so no query leaves the lab.
const (
	gatewayZone = "strait.test"
	gatewayName = "gw.c2." + gatewayZone
	// dnsRefresh is the ClusterSet's refreshInterval for gatewayName: the shortest
	// the API allows.
	dnsRefresh = 5 * time.Second
	// DNSFollowBound bounds the time from a changed record to c1 dialing the new
	// address: the lab's copy of the ConfigMap into the Corefile (every 2 s), CoreDNS's
	// reload (every 2 s, jittered by up to 1 s), c1's refresh (5 s), an IKE exchange
	// and the GET that shows it (1 s), and 4 s for a loaded machine.
	DNSFollowBound = 2*time.Second + 3*time.Second + dnsRefresh + time.Second + 4*time.Second
	// lbAddressBound bounds the time from a cloud writing the LoadBalancer address to
	// c1 → c2 answering through it: the hub woken by the Service, the Peer written,
	// c1's agent loading the connection, one IKE exchange.
	lbAddressBound = 10 * time.Second
)

// reachedAsTheFileSays runs, on the ipsec cable (c1's ID sorts first, so only c1
// dials: the address it dials must be right for any traffic to cross), each way the
// ClusterSet can say c2's gateways are reached behind their 1:1 NAT besides their
// ExternalIP: one public address per gateway node; a LoadBalancer Service whose
// address a cloud writes after the commit; a DNS name c1 resolves again every 5 s,
// whose changed record c1 follows.
func reachedAsTheFileSays(t *testing.T, env *labtest.Env) {
	if err := env.SwitchCable(t, straitv1.CableIPsec); err != nil {
		t.Fatal(err)
	}
	c2, _ := env.Topo.Cluster("c2")
	t.Run("one public address per gateway node", func(t *testing.T) {
		var nas []straitv1.NodeAddress
		for _, n := range c2.Nodes {
			if n.Gateway {
				nas = append(nas, straitv1.NodeAddress{Node: n.Name, Address: n.ExternalIP.String()})
			}
		}
		setEndpoint(t, env, &straitv1.GatewayEndpoint{Type: straitv1.EndpointAddress, NodeAddresses: nas})
		requirePeer(t, env, "c1", "c2", straitv1.CableIPsec)
		env.CrossTraffic(t, "c1", "c2")
	})
	t.Run("a LoadBalancer Service, its address written after the commit", func(t *testing.T) {
		lbAddressWrittenLater(t, env)
	})
	t.Run("a DNS name c1 resolves again every 5 s, followed both ways", func(t *testing.T) {
		dnsNameFollowed(t, env)
	})
}

// setEndpoint commits c2's gateway endpoint and waits until Flux applied it.
func setEndpoint(t *testing.T, env *labtest.Env, ep *straitv1.GatewayEndpoint) {
	t.Helper()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].Gateway.Endpoint = ep }); err != nil {
		t.Fatal(err)
	}
}

// lbAddressWrittenLater: the ClusterSet names a LoadBalancer Service of c2 before any
// address is known (c1's Peer has no endpoint to dial), then
// the test writes the Service's status as a cloud's controller does, with the address
// c2's router maps to its active gateway: c1 dials it and traffic crosses.
func lbAddressWrittenLater(t *testing.T, env *labtest.Env) {
	ctx := context.Background()
	services := env.HostClient(t, "c2").CoreV1().Services(straitv1.SystemNamespace)
	svc, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-gateway"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "cable", Protocol: corev1.ProtocolUDP, Port: int32(cablePort(t, env))}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = services.Delete(ctx, svc.Name, metav1.DeleteOptions{}) })
	setEndpoint(t, env, &straitv1.GatewayEndpoint{Type: straitv1.EndpointLoadBalancer,
		Service: &straitv1.ServiceReference{Namespace: straitv1.SystemNamespace, Name: svc.Name}})
	require.Eventually(t, labtest.Converge, "c1's Peer c2 without an endpoint while the Service has no address", func() error {
		p, err := peer(t, env, "c1", "c2")
		if err == nil && p.Spec.Endpoint != nil {
			err = fmt.Errorf("spec.endpoint %+v", p.Spec.Endpoint)
		}
		return err
	})

	addr := env.ActiveGateway(t, "c2").ExternalIP.String()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	if _, err := services.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	src, target := env.CrossTraffic(t, "c1", "c2")
	took := time.Since(written)
	t.Logf("figure: LoadBalancer address %s written → c1 → c2 answered in %s (bound %s)", addr, took.Round(time.Millisecond), lbAddressBound)
	if took > lbAddressBound {
		t.Errorf("c1 → c2 %s from %s answered %s after the LoadBalancer's address was written; want within %s", target, src.Name, took, lbAddressBound)
	}
	requirePeer(t, env, "c1", "c2", straitv1.CableIPsec)
}

// dnsNameFollowed: c2's gateways reached by gatewayName, which c1's CoreDNS answers
// with the active gateway's public address; c1's Peer shows the name and the address in
// use. Then the record moves to the standby's address, where nothing answers the cable:
// c1, re-resolving every 5 s, drops the working SA for it and traffic stops. Moved back,
// c1 dials the active gateway again and traffic answers. c1 alone dials on this cable,
// so nothing but c1 following the record both ways can pass this.
func dnsNameFollowed(t *testing.T, env *labtest.Env) {
	ctx := context.Background()
	coredns := env.HostClient(t, "c1").CoreV1().ConfigMaps("kube-system")
	c2, _ := env.Topo.Cluster("c2")
	active := env.ActiveGateway(t, "c2")
	var standby topology.Node
	for _, n := range c2.Nodes {
		if n.Gateway && n.Name != active.Name {
			standby = n
		}
	}
	if err := setGatewayRecord(ctx, coredns, active.ExternalIP.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setGatewayRecord(context.Background(), coredns, ""); err != nil {
			t.Errorf("removing the test's zone from c1's Corefile: %v", err)
		}
	})
	setEndpoint(t, env, &straitv1.GatewayEndpoint{Type: straitv1.EndpointDNSName, DNSName: gatewayName,
		RefreshInterval: &metav1.Duration{Duration: dnsRefresh}})
	requireDialedByName(t, env, active)
	src, target := env.CrossTraffic(t, "c1", "c2")

	if err := setGatewayRecord(ctx, coredns, standby.ExternalIP.String()); err != nil {
		t.Fatal(err)
	}
	took, err := require.Within(DNSFollowBound, func() error {
		if _, err := labtest.TryWhereamiWithin(src.NS, target, time.Second); err == nil {
			return fmt.Errorf("c1 → c2 %s still answers", target)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s moved to %s's address %s: %v; want c1 to follow it within %s", gatewayName, standby.Name, standby.ExternalIP, err, DNSFollowBound)
	}
	t.Logf("figure: %s moved to the standby's address: c1 → c2 stopped %s later (bound %s)", gatewayName, took.Round(time.Millisecond), DNSFollowBound)

	if err := setGatewayRecord(ctx, coredns, active.ExternalIP.String()); err != nil {
		t.Fatal(err)
	}
	took, err = require.Within(DNSFollowBound, func() error {
		_, err := labtest.TryWhereamiWithin(src.NS, target, time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("%s moved back to %s's address: c1 → c2 %s: %v; want an answer within %s", gatewayName, active.Name, target, err, DNSFollowBound)
	}
	t.Logf("figure: %s moved back to the active gateway's address: c1 → c2 answered %s later (bound %s)", gatewayName, took.Round(time.Millisecond), DNSFollowBound)
	requireDialedByName(t, env, active)
}

// requireDialedByName waits until c1's Peer c2 names gatewayName and dials gw's
// public address, Connected.
func requireDialedByName(t *testing.T, env *labtest.Env, gw topology.Node) {
	t.Helper()
	require.Eventually(t, labtest.Converge, "c1's Peer c2 dialed by name at "+gw.Name+"'s address", func() error {
		p, err := peer(t, env, "c1", "c2")
		if err != nil {
			return err
		}
		ep := p.Spec.Endpoint
		if ep == nil || ep.Hostname != gatewayName || ep.IP != "" || ep.Gateway != gw.Name {
			return fmt.Errorf("spec.endpoint %+v, want hostname %s and no IP, gateway %s", ep, gatewayName, gw.Name)
		}
		if want := net.JoinHostPort(gw.ExternalIP.String(), strconv.Itoa(int(ep.Port))); p.Status.Endpoint != want {
			return fmt.Errorf("status.endpoint %q, want %s", p.Status.Endpoint, want)
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, straitv1.ConditionConnected); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition Connected %+v", c)
		}
		return nil
	})
}

// The test's server block in c1's Corefile, between its markers.
const (
	zoneBegin = "# strait e2e: gateway names\n"
	zoneEnd   = "# strait e2e: end\n"
)

// setGatewayRecord puts the test's zone into c1's Corefile with gatewayName at addr,
// or takes it out (addr ""), leaving the rest (strait dns's block included) as it is.
func setGatewayRecord(ctx context.Context, coredns typedcorev1.ConfigMapInterface, addr string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := coredns.Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		corefile := cm.Data["Corefile"]
		if i := strings.Index(corefile, zoneBegin); i >= 0 {
			if j := strings.Index(corefile[i:], zoneEnd); j >= 0 {
				corefile = corefile[:i] + corefile[i+j+len(zoneEnd):]
			}
		}
		if addr != "" {
			corefile += zoneBegin + gatewayZone + ":53 {\n    hosts {\n        " + addr + " " + gatewayName + "\n        ttl 1\n    }\n}\n" + zoneEnd
		}
		cm.Data["Corefile"] = corefile
		_, err = coredns.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// peer reads local's Peer for remote.
func peer(t *testing.T, env *labtest.Env, local, remote string) (straitv1.Peer, error) {
	var p straitv1.Peer
	err := env.Client(t, local).Get(context.Background(), client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: remote}, &p)
	return p, err
}
