package node

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/straitnet/strait/lab/flannel"
)

func validConfig() Config {
	return Config{
		Name: "c1-node1", NetNS: "/run/netns/sl-c1-n1", NodeIP: netip.MustParseAddr("10.250.1.2"),
		PodCIDR: netip.MustParsePrefix("10.7.1.0/24"), KubeConfig: []byte("apiVersion: v1"),
		BinDir: "/opt/bin/node", Kubelet: "/opt/bin/kubelet", StateDir: "/run/strait-lab/nodes/c1-node1",
		SandboxImage: "strait-lab/pause:dev",
	}
}

func TestValidateNamesTheFieldAndValue(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Name = "Node_1" }, `name "Node_1": must be a DNS label`},
		{func(c *Config) { c.PodCIDR = netip.MustParsePrefix("10.7.1.5/24") }, `podCIDR "10.7.1.5/24"`},
		{func(c *Config) { c.NetNS = "sl-c1" }, `netns "sl-c1": must be an absolute path`},
		{func(c *Config) { c.StateDir = "state" }, `stateDir "state": must be an absolute path`},
		{func(c *Config) { c.SandboxImage = "" }, `sandboxImage "": is required`},
		{func(c *Config) { c.CNI = "calico" }, `cni "calico": must be "" (the bridge) or "flannel"`},
		{func(c *Config) { c.NodeIP6 = netip.MustParseAddr("fd10:1ab:0:1::b") }, `nodeIP6 "fd10:1ab:0:1::b": a dual-stack node needs both`},
		{func(c *Config) {
			c.NodeIP6, c.PodCIDR6 = netip.MustParseAddr("10.250.1.3"), netip.MustParsePrefix("fd10:1ab:0:8001::/64")
		}, `nodeIP6 "10.250.1.3": must be an IPv6 address`},
		{func(c *Config) {
			c.NodeIP6, c.PodCIDR6 = netip.MustParseAddr("fd10:1ab:0:1::b"), netip.MustParsePrefix("fd10:1ab:0:8001::/64")
			c.CNI = CNIFlannel
		}, `cni "flannel": a dual-stack node runs the bridge`},
		{func(c *Config) { c.NodeIP = netip.MustParseAddr("fd10:1ab:0:1::b") }, `podCIDR "10.7.1.0/24": must be an IPv6 network`},
		{func(c *Config) {
			c.NodeIP, c.PodCIDR = netip.MustParseAddr("fd10:1ab:0:1::b"), netip.MustParsePrefix("fd10:8:0:1::/64")
			c.NodeIP6, c.PodCIDR6 = netip.MustParseAddr("fd10:1ab:0:1::c"), netip.MustParsePrefix("fd10:8:0:2::/64")
		}, `nodeIP6 "fd10:1ab:0:1::c": an IPv6-only node has its IPv6 address in nodeIP`},
	} {
		c := validConfig()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to say %q", err, tc.want)
		}
	}
	if err := validConfig().Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestConfigsPointAtTheNodesOwnPathsAndPinThePauseImage(t *testing.T) {
	c := validConfig()
	l := layout{dir: c.StateDir}
	toml := containerdConfig(c, l)
	for _, want := range []string{
		`root = "/run/strait-lab/nodes/c1-node1/containerd/root"`,
		`address = "/run/strait-lab/nodes/c1-node1/containerd/containerd.sock"`,
		`sandbox = "docker.io/strait-lab/pause:dev"`,
		`restrict_oom_score_adj = true`,
		`BinaryName = "/opt/bin/node/runc"`,
		`bin_dirs = ["/opt/bin/node"]`,
	} {
		if !strings.Contains(toml, want) {
			t.Errorf("containerd config lacks %s", want)
		}
	}
	var kc map[string]any
	data, err := kubeletConfig(c, l)
	if err != nil || json.Unmarshal(data, &kc) != nil {
		t.Fatalf("kubelet config: %v", err)
	}
	if kc["cgroupRoot"] != "/strait-node-c1-node1" || kc["podCIDR"] != "10.7.1.0/24" || kc["address"] != "10.250.1.2" {
		t.Errorf("kubelet config: cgroupRoot %v podCIDR %v address %v", kc["cgroupRoot"], kc["podCIDR"], kc["address"])
	}
	// A disk 85% full (the kubelet's default imagefs.available < 15%) is no reason to
	// evict a lab node's pods: only an absolute gigabyte left is.
	if ev, _ := kc["evictionHard"].(map[string]any); ev["imagefs.available"] != "1Gi" || ev["nodefs.available"] != "1Gi" {
		t.Errorf("kubelet config: evictionHard %v, want absolute disk thresholds", kc["evictionHard"])
	}
	// Repeated fault tests in one lab must not wait out minutes of crash-loop back-off.
	if bo, _ := kc["crashLoopBackOff"].(map[string]any); bo["maxContainerRestartPeriod"] != "1s" {
		t.Errorf("kubelet config: crashLoopBackOff %v, want maxContainerRestartPeriod 1s", kc["crashLoopBackOff"])
	}
	var cni struct {
		Plugins []struct {
			Bridge string
			IPAM   struct {
				Ranges  [][]map[string]string
				DataDir string
			}
		}
	}
	data, err = cniConfig(c, l)
	if err != nil || json.Unmarshal(data, &cni) != nil || len(cni.Plugins) != 1 {
		t.Fatalf("cni config %s: %v", data, err)
	}
	r := cni.Plugins[0].IPAM.Ranges[0][0]
	if r["subnet"] != "10.7.1.0/24" || r["gateway"] != "10.7.1.1" || cni.Plugins[0].IPAM.DataDir != l.cniDataDir() {
		t.Errorf("cni range %v data dir %s", r, cni.Plugins[0].IPAM.DataDir)
	}
}

// A flannel node's conflist is what the lab's flannel plugin reads: handed flanneld's
// subnet.env, it gives the bridge plugin the node's bridge, flanneld's subnet and MTU and
// the state directory's address records.
func TestFlannelNodesConflistIsTheFlannelPlugins(t *testing.T) {
	c := validConfig()
	c.CNI = CNIFlannel
	l := layout{dir: c.StateDir}
	data, err := cniConfig(c, l)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CNIVersion string
		Name       string
		Plugins    []json.RawMessage
	}
	if err := json.Unmarshal(data, &list); err != nil || len(list.Plugins) != 1 {
		t.Fatalf("conflist %s: %v", data, err)
	}
	// The runtime hands each plugin its entry with the list's name and version.
	var entry map[string]any
	if err := json.Unmarshal(list.Plugins[0], &entry); err != nil {
		t.Fatal(err)
	}
	entry["name"], entry["cniVersion"] = list.Name, list.CNIVersion
	conf, _ := json.Marshal(entry)
	n, err := flannel.ParseNetConf(conf)
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "flannel" || n.SubnetFile != flannel.DefaultSubnetFile || n.DataDir != l.cniFlannelDir() {
		t.Errorf("flannel conf %+v: want type flannel, subnet.env at flanneld's path, data in the state directory", n)
	}
	env, err := flannel.ParseSubnetEnv([]byte("FLANNEL_NETWORK=10.7.0.0/16\nFLANNEL_SUBNET=10.7.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := flannel.Delegate(n, env)
	if err != nil {
		t.Fatal(err)
	}
	ipam, _ := d["ipam"].(map[string]any)
	if d["type"] != "bridge" || d["bridge"] != Bridge || d["ipMasq"] != false || d["mtu"] != 1450 || d["isDefaultGateway"] != true ||
		ipam["dataDir"] != l.cniDataDir() {
		t.Errorf("delegate %v: want the bridge %s without masquerade, MTU 1450, default gateway, addresses under %s", d, Bridge, l.cniDataDir())
	}
}

func TestFullImageNameMatchesKubernetesNormalization(t *testing.T) {
	for in, want := range map[string]string{
		"pause:dev":                  "docker.io/library/pause:dev",
		"strait-lab/pause:dev":       "docker.io/strait-lab/pause:dev",
		"registry.example/x/pause:1": "registry.example/x/pause:1",
		"localhost/pause:dev":        "localhost/pause:dev",
		"localhost:5000/pause:dev":   "localhost:5000/pause:dev",
	} {
		if got := fullImageName(in); got != want {
			t.Errorf("fullImageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOutermostKeepsOnlyTopDirectories(t *testing.T) {
	got := outermost([]string{"/run/lab/nodes/n1", "/work/bin/node", "/run/lab", "/work/bin/k8s", "/work/bin"})
	want := []string{"/run/lab", "/work/bin"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("outermost = %v, want %v", got, want)
	}
	if under("/runx", "/run") || !under("/run/x", "/run") {
		t.Error("under confuses /runx with /run/...")
	}
}

// TestDualStackNodeGetsBothFamilies: a dual-stack node's kubelet reports both node IPs,
// IPv4 first, and its bridge gives every pod an address from a range of each family.
func TestDualStackNodeGetsBothFamilies(t *testing.T) {
	c := validConfig()
	c.NodeIP6, c.PodCIDR6 = netip.MustParseAddr("fd10:1ab:0:1::b"), netip.MustParsePrefix("fd10:1ab:0:8001::/64")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	l := layout{dir: c.StateDir}
	if args := strings.Join(kubeletArgs(c, l), " "); !strings.Contains(args, "--node-ip=10.250.1.2,fd10:1ab:0:1::b") {
		t.Errorf("kubelet args %s, want both node IPs", args)
	}
	data, err := cniConfig(c, l)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(conf.Plugins[0].IPAM.Ranges)
	want := `[[{"gateway":"10.7.1.1","subnet":"10.7.1.0/24"}],[{"gateway":"fd10:1ab:0:8001::1","subnet":"fd10:1ab:0:8001::/64"}]]`
	if string(got) != want {
		t.Errorf("host-local ranges %s, want %s", got, want)
	}
}

// TestIPv6OnlyNodeGetsIPv6Alone: an IPv6-only node (NodeIP and PodCIDR IPv6) reports its
// IPv6 node IP alone, serves the kubelet there, and its bridge gives pods IPv6 alone.
func TestIPv6OnlyNodeGetsIPv6Alone(t *testing.T) {
	c := validConfig()
	c.NodeIP, c.PodCIDR = netip.MustParseAddr("fd10:1ab:0:1::b"), netip.MustParsePrefix("fd10:8:0:1::/64")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	l := layout{dir: c.StateDir}
	if args := strings.Join(kubeletArgs(c, l), " "); !strings.Contains(args, "--node-ip=fd10:1ab:0:1::b ") && !strings.HasSuffix(args, "--node-ip=fd10:1ab:0:1::b") {
		t.Errorf("kubelet args %s, want the IPv6 node IP alone", args)
	}
	data, err := cniConfig(c, l)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"subnet": "fd10:8:0:1::/64"`; !strings.Contains(string(data), want) || strings.Contains(string(data), "10.7.1") {
		t.Errorf("CNI config %s, want one range, %s", data, want)
	}
	conf, err := kubeletConfig(c, l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), `"address": "fd10:1ab:0:1::b"`) {
		t.Errorf("kubelet config %s, want it to serve on the IPv6 node IP", conf)
	}
}
