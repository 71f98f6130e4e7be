package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/labtest"
)

// TestHostReachesTheLabOnlyThroughItsLink: with the lab up the host sends an address of
// every lab range into the lab's link, never out through its default route, and its
// resolver keeps its way (ip route get: nothing is sent); then every kubeconfig of the
// lab works from the host, the LAN ones (what nodes and the hub's Secrets use) too.
// labtest.Main checks that after "lab down" none of those addresses goes to the lab's
// link any more.
func TestHostReachesTheLabOnlyThroughItsLink(t *testing.T) {
	env.Require(t)
	env.CheckHostRoutes(t)
	st := env.Lab.State()
	for _, cluster := range append([]string{topology.HubName}, members()...) {
		for _, path := range []string{st.KubeconfigPath(cluster), st.LANKubeconfig(cluster)} {
			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Timeout = 5 * time.Second
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Discovery().ServerVersion(); err != nil {
				t.Errorf("%s from the host with %s (%s): %v", cluster, filepath.Base(path), cfg.Host, err)
			}
		}
	}
}

// TestStraitDiffWithTheHubKubeconfigAlone: strait diff with only the hub's kubeconfig,
// as docs/gitops.md and "strait lab git --help" tell a user, reaches every member at the
// LAN address its Secret in the hub names (it failed with an x509 error from a server
// outside the machine when the host had no route into the lab).
func TestStraitDiffWithTheHubKubeconfigAlone(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	out, errOut, code := straitDiff(t, filepath.Join(env.Root, labClusterSet))
	if code > 1 || errOut != "" {
		t.Errorf("strait diff -f %s --kubeconfig <hub>: exit %d, want 0 or 1 and nothing on stderr:\n%s%s", labClusterSet, code, out, errOut)
	}
}

// TestInternetSeesWhoCalls: the internet namespace answers with the caller's address as
// it arrives: the host's link address from the host, the pod's own IP from a pod (the
// bridge CNI masquerades nothing and the routers translate nothing), and a node's LAN
// address from a gateway node: a gateway's traffic other than its cables leaves through
// its cluster's router, not its own WAN link.
func TestInternetSeesWhoCalls(t *testing.T) {
	env.Require(t)
	in := env.Topo.Internet
	echo := net.JoinHostPort(in.Addr.String(), strconv.Itoa(topology.EchoPort))
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + echo + "/")
	if err != nil {
		t.Fatalf("from the host: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a workload.Answer
	if err == nil {
		err = json.Unmarshal(body, &a)
	}
	if err != nil || a.Caller != env.Topo.HostLink.Addr.Addr().String() || a.Cluster != "internet" {
		t.Errorf("from the host: %+v %v, want caller %s", a, err, env.Topo.HostLink.Addr.Addr())
	}
	for _, cluster := range members() {
		ns, clientIP := env.ClientNamespace(t, cluster)
		if a := labtest.Whereami(t, ns, echo); a.Caller != clientIP.String() {
			t.Errorf("%s's client pod %s: the internet saw %s", cluster, clientIP, a.Caller)
		}
		c, _ := env.Topo.Cluster(cluster)
		for _, n := range c.Nodes {
			if !n.Gateway {
				continue
			}
			if a := labtest.Whereami(t, n.Namespace, echo); a.Caller != n.LANAddr.Addr().String() {
				t.Errorf("gateway %s: the internet saw %s, want its LAN address %s (through %s, not its WAN link)",
					n.Name, a.Caller, n.LANAddr.Addr(), c.Router.Namespace)
			}
		}
	}
}

// TestTheInternetCarriesNothingBetweenClusters: the lab's internet routes every
// member's pod and service ranges (the host reaches them through it) but forwards to
// them only what comes from the host's link, so traffic between clusters that misses
// Strait is dropped, as between real sites: from c1's router, whose only way to c2 is
// the internet, c2's pod does not answer in either family, while from the host it does.
func TestTheInternetCarriesNothingBetweenClusters(t *testing.T) {
	env.Require(t)
	remote := env.SamplePods(t, "c2", lab.WhereamiSS)[0]
	c1, _ := env.Topo.Cluster("c1")
	hc := &http.Client{Timeout: 5 * time.Second}
	// The router's way to the internet works in both families: what is dropped is the
	// way on to c2.
	for _, in := range []netip.Addr{env.Topo.Internet.Addr, env.Topo.Internet.Addr6} {
		echo := net.JoinHostPort(in.String(), strconv.Itoa(topology.EchoPort))
		if _, err := labtest.TryWhereami(c1.Router.Namespace, echo); err != nil {
			t.Errorf("%s → the internet's echo %s: %v", c1.Router.Namespace, echo, err)
		}
	}
	for _, ip := range remote.Status.PodIPs {
		to := net.JoinHostPort(ip.IP, strconv.Itoa(workload.WhereamiPort))
		if a, err := labtest.TryWhereamiWithin(c1.Router.Namespace, to, 2*time.Second); err == nil {
			t.Errorf("%s → c2's pod %s through the internet: answered by %s; want it dropped", c1.Router.Namespace, to, a.Pod)
		}
		resp, err := hc.Get("http://" + to + "/")
		if err != nil {
			t.Errorf("host → c2's pod %s: %v", to, err)
			continue
		}
		resp.Body.Close()
	}
}
