package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Config is one node.
type Config struct {
	// Name is the Node's name in the API.
	Name string
	// ID names the node's cgroups ("strait-node-<ID>"): unique among the nodes running on
	// this machine. Default: Name.
	ID string
	// NetNS is the path of the node's network namespace (like /run/netns/sl-c1-n1).
	NetNS string
	// NodeIP is the node's address inside NetNS: the kubelet serves there (port 10250,
	// anonymous) and reports it as the Node's InternalIP. For logs and exec the API server
	// must reach it and prefer it (--kubelet-preferred-address-types=InternalIP: the
	// node's name resolves nowhere). IPv4, or IPv6 on an IPv6-only node.
	NodeIP netip.Addr
	// PodCIDR is the node's pod range, of NodeIP's family; the CNI bridge takes its first
	// address.
	PodCIDR netip.Prefix
	// NodeIP6 and PodCIDR6 make an IPv4 node dual-stack (both or neither): the kubelet
	// reports both node IPs (IPv4 first) and the bridge gives every pod an address of
	// each family, the bridge taking PodCIDR6's first address too.
	NodeIP6  netip.Addr
	PodCIDR6 netip.Prefix
	// KubeConfig is the kubelet's connection to the API server, reachable from NetNS.
	KubeConfig []byte
	// BinDir holds containerd, containerd-shim-runc-v2, ctr, runc and the CNI plugins.
	BinDir string
	// Kubelet is the kubelet binary.
	Kubelet string
	// StateDir is the node's own directory (created; removed by Teardown).
	StateDir string
	// Images are image tarballs imported into the node's containerd before the kubelet
	// starts; SandboxImage (the pause image's name) must be one of them.
	Images       []string
	SandboxImage string
	// Seeds, when set, is a directory of seeds (seed.go): a node whose image set has a
	// seed there starts its containerd from it instead of importing Images; one that
	// has none imports them and leaves its seed there for the next. Nodes of one set
	// started at once each import: start one first.
	Seeds string
	// ClusterDNS and ClusterDomain go to the pods' resolv.conf (optional).
	ClusterDNS    []netip.Addr
	ClusterDomain string
	// Labels are the Node's labels.
	Labels map[string]string
	// CNI is the node's pod network plugin (default CNIBridge).
	CNI CNI
	// ExternalCloudProvider runs the kubelet with --cloud-provider=external: it then
	// keeps the Node's addresses when it finds any (a cloud provider's controller sets
	// them; the lab does, with an ExternalIP) instead of replacing them with its own.
	ExternalCloudProvider bool
}

// CNI is what the node's one CNI network runs.
type CNI string

// The node's CNI networks.
const (
	// CNIBridge is the bridge plugin with host-local addresses from PodCIDR; routes to the
	// other nodes' pods are the lab's (host-gw).
	CNIBridge CNI = ""
	// CNIFlannel is the lab's flannel plugin (lab/flannel/cmd/flannel), which takes the
	// node's subnet from flanneld's /run/flannel/subnet.env: flanneld, run by the
	// cluster's DaemonSet, must be on the node, and it routes between nodes itself.
	CNIFlannel CNI = "flannel"
)

var label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate says which field is wrong and why.
func (c Config) Validate() error { return c.validate(true) }

// validate is Validate, the kubeconfig required only with kubeconfig: Prepare runs
// before the API server it reaches is up.
func (c Config) validate(kubeconfig bool) error {
	var errs []string
	bad := func(field, value, why string) { errs = append(errs, fmt.Sprintf("%s %q: %s", field, value, why)) }
	if !label.MatchString(c.Name) || len(c.Name) > 63 {
		bad("name", c.Name, "must be a DNS label")
	}
	if c.ID != "" && !label.MatchString(c.ID) {
		bad("id", c.ID, "must be a DNS label")
	}
	if !filepath.IsAbs(c.NetNS) {
		bad("netns", c.NetNS, "must be an absolute path to a network namespace")
	}
	v6only := c.NodeIP.Is6() && !c.NodeIP.Is4In6()
	switch {
	case !c.NodeIP.Is4() && !v6only:
		bad("nodeIP", c.NodeIP.String(), "must be an IPv4 address, or an IPv6 one on an IPv6-only node")
	case !v6only && (!c.PodCIDR.IsValid() || !c.PodCIDR.Addr().Is4() || c.PodCIDR.Bits() > 30 || c.PodCIDR.Masked() != c.PodCIDR):
		bad("podCIDR", c.PodCIDR.String(), "must be an IPv4 network of at least 4 addresses, with no host bits")
	case v6only && (!c.PodCIDR.IsValid() || !c.PodCIDR.Addr().Is6() || c.PodCIDR.Bits() > 120 || c.PodCIDR.Masked() != c.PodCIDR):
		bad("podCIDR", c.PodCIDR.String(), "must be an IPv6 network of at least 256 addresses, with no host bits, on an IPv6-only node")
	}
	if v6only && c.CNI != CNIBridge {
		bad("cni", string(c.CNI), "an IPv6-only node runs the bridge")
	}
	if v6only && (c.NodeIP6.IsValid() || c.PodCIDR6.IsValid()) {
		bad("nodeIP6", c.NodeIP6.String(), "an IPv6-only node has its IPv6 address in nodeIP")
	}
	if c.NodeIP6.IsValid() != c.PodCIDR6.IsValid() {
		bad("nodeIP6", c.NodeIP6.String(), "a dual-stack node needs both nodeIP6 and podCIDR6")
	}
	if c.NodeIP6.IsValid() && (!c.NodeIP6.Is6() || c.NodeIP6.Is4In6()) {
		bad("nodeIP6", c.NodeIP6.String(), "must be an IPv6 address")
	}
	if c.PodCIDR6.IsValid() && (!c.PodCIDR6.Addr().Is6() || c.PodCIDR6.Bits() > 120 || c.PodCIDR6.Masked() != c.PodCIDR6) {
		bad("podCIDR6", c.PodCIDR6.String(), "must be an IPv6 network of at least 256 addresses, with no host bits")
	}
	if c.PodCIDR6.IsValid() && c.CNI != CNIBridge {
		bad("cni", string(c.CNI), "a dual-stack node runs the bridge")
	}
	if kubeconfig && len(c.KubeConfig) == 0 {
		bad("kubeConfig", "", "is required")
	}
	for field, p := range map[string]string{"binDir": c.BinDir, "kubelet": c.Kubelet, "stateDir": c.StateDir} {
		if !filepath.IsAbs(p) {
			bad(field, p, "must be an absolute path")
		}
	}
	// The kubelet's sockets (root/pod-resources/<number>) must fit a socket path's 107
	// bytes.
	if len(c.StateDir) > maxStateDir {
		bad("stateDir", c.StateDir, fmt.Sprintf("longer than %d bytes: the sockets under it would not fit a unix socket path", maxStateDir))
	}
	if c.CNI != CNIBridge && c.CNI != CNIFlannel {
		bad("cni", string(c.CNI), fmt.Sprintf("must be %q (the bridge) or %q", CNIBridge, CNIFlannel))
	}
	if c.SandboxImage == "" {
		bad("sandboxImage", "", "is required (the pause image, imported from Images)")
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("node %s: %s", c.Name, strings.Join(errs, "; "))
	}
	return nil
}

// maxStateDir is the longest state directory whose sockets fit.
const maxStateDir = 64

// cgroupName is the node's cgroup directory name in every hierarchy.
func (c Config) cgroupName() string {
	if c.ID != "" {
		return "strait-node-" + c.ID
	}
	return "strait-node-" + c.Name
}

// layout is where a node keeps its files, all under the state directory.
type layout struct{ dir string }

func (l layout) record() string           { return filepath.Join(l.dir, "node.json") }
func (l layout) nsDir() string            { return filepath.Join(l.dir, "ns") }
func (l layout) mountNS() string          { return filepath.Join(l.dir, "ns", "mnt") }
func (l layout) sysctlDir() string        { return filepath.Join(l.dir, "sysctl") }
func (l layout) logDir() string           { return filepath.Join(l.dir, "logs") }
func (l layout) containerdConfig() string { return filepath.Join(l.dir, "containerd", "config.toml") }
func (l layout) containerdRoot() string   { return filepath.Join(l.dir, "containerd", "root") }
func (l layout) containerdState() string  { return filepath.Join(l.dir, "containerd", "state") }
func (l layout) socket() string           { return filepath.Join(l.dir, "containerd", "containerd.sock") }
func (l layout) runcRoot() string         { return filepath.Join(l.dir, "containerd", "runc") }
func (l layout) cniConfDir() string       { return filepath.Join(l.dir, "cni", "net.d") }
func (l layout) cniDataDir() string       { return filepath.Join(l.dir, "cni", "networks") }
func (l layout) cniFlannelDir() string    { return filepath.Join(l.dir, "cni", "flannel") }
func (l layout) kubeletDir() string       { return filepath.Join(l.dir, "kubelet") }
func (l layout) kubeletRoot() string      { return filepath.Join(l.dir, "kubelet", "root") }
func (l layout) kubeletConfig() string    { return filepath.Join(l.dir, "kubelet", "config.yaml") }
func (l layout) kubeconfig() string       { return filepath.Join(l.dir, "kubelet", "kubeconfig") }
func (l layout) resolvConf() string       { return filepath.Join(l.dir, "kubelet", "resolv.conf") }
func (l layout) log(component string) string {
	return filepath.Join(l.dir, "logs", component+".log")
}

// Bridge is the CNI bridge in the node's network namespace.
const Bridge = "cni0"

// record is what Teardown needs to find everything of a node after a crash.
type record struct {
	Name   string `json:"name"`
	Cgroup string `json:"cgroup"`
	NetNS  string `json:"netns"`
}

func writeRecord(l layout, r record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(l.record(), data, 0o644)
}

func readRecord(l layout) (record, error) {
	var r record
	data, err := os.ReadFile(l.record())
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", l.record(), err)
	}
	return r, nil
}
