package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// containerdConfig is containerd's config (version 3): its own root, state and socket;
// the CRI plugin with runc from BinDir, the CNI plugins from BinDir and the pause image
// pinned so nothing is ever pulled. restrict_oom_score_adj because the machine may lack
// CAP_SYS_RESOURCE (every sandbox would fail on oom_score_adj); netns mounts under the
// state directory so they live in the node's mount namespace.
func containerdConfig(c Config, l layout) string {
	q := strconv.Quote
	return `version = 3
root = ` + q(l.containerdRoot()) + `
state = ` + q(l.containerdState()) + `
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]

[grpc]
  address = ` + q(l.socket()) + `
[ttrpc]
  address = ` + q(l.socket()+".ttrpc") + `
[debug]
  address = ""
[metrics]
  address = ""

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ` + q(fullImageName(c.SandboxImage)) + `

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [` + q(c.BinDir) + `]
    conf_dir = ` + q(l.cniConfDir()) + `
    max_conf_num = 1
    use_internal_loopback = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ` + q(c.BinDir+"/runc") + `
        Root = ` + q(l.runcRoot()) + `
        SystemdCgroup = false
`
}

// fullImageName is the name containerd's CRI plugin keys an image by: "pause:dev" and
// "strait-lab/pause:dev" both mean docker.io/..., as Kubernetes normalizes them.
func fullImageName(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return ref
	}
	return "docker.io/" + ref
}

// cniConfig is the node's one CNI network. The bridge: a bridge that is every pod's
// gateway (its address the pod CIDR's first) and host-local addresses from the pod CIDR,
// the allocations kept in the state directory. Flannel: flannel's conflist as its
// manifest's install-cni would copy it (the flannel plugin delegating to the bridge with
// hairpin mode and the bridge as default gateway), less its portmap entry (the lab builds
// no portmap plugin and no pod asks for host ports), with the plugin's and host-local's
// data in the state directory; the subnet is flanneld's, from the node's
// /run/flannel/subnet.env.
func cniConfig(c Config, l layout) ([]byte, error) {
	var plugin map[string]any
	switch c.CNI {
	case CNIFlannel:
		plugin = map[string]any{
			"type": "flannel", "dataDir": l.cniFlannelDir(),
			"ipam":     map[string]any{"dataDir": l.cniDataDir()},
			"delegate": map[string]any{"bridge": Bridge, "hairpinMode": true, "isDefaultGateway": true},
		}
	default:
		// One range set per family: host-local gives a pod an address from each, the
		// bridge takes each gateway and the pod a default route of each family.
		ranges := [][]map[string]string{{{"subnet": c.PodCIDR.String(), "gateway": c.PodCIDR.Addr().Next().String()}}}
		if c.PodCIDR6.IsValid() {
			ranges = append(ranges, []map[string]string{{"subnet": c.PodCIDR6.String(), "gateway": c.PodCIDR6.Addr().Next().String()}})
		}
		plugin = map[string]any{
			"type": "bridge", "bridge": Bridge, "isGateway": true, "isDefaultGateway": true,
			"ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  ranges,
				"dataDir": l.cniDataDir(),
			},
		}
	}
	conf := map[string]any{"cniVersion": "1.0.0", "name": "strait-lab", "plugins": []any{plugin}}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the KubeletConfiguration. The cgroupfs driver with the node's own
// cgroupRoot (this machine has cgroup v1 hierarchies, so failCgroupV1 is off); the API
// server reaches the kubelet anonymously (logs, exec) as nothing else can reach the node;
// image garbage collection off, since the imported images cannot be pulled again; hard
// eviction only on a disk or memory nearly exhausted (see evictionHard); a crash-loop
// back-off of 1 s at most instead of 10 s doubling to 300 s.
//
// The fault tests kill Strait's agents again and again in one lab, as a person trying
// failovers in `make lab` does. With the default back-off, the sixth restart of a
// container in ten minutes waited 160 s, and a kubelet that had not restarted an agent
// for minutes left a gateway without its agent and the next test, or the next attempt,
// without a standby: a state of the kubelet, not of Strait. At 10 s, the 20 crash
// failovers of TestFailoverStaysFast spent 80 of their 140 s waiting for the kubelets to
// restart the killed agents: what is measured (the outage, from the kill) does not
// depend on it, since the kubelet is paused until the other gateway carries the traffic.
func kubeletConfig(c Config, l layout) ([]byte, error) {
	dns := make([]string, 0, len(c.ClusterDNS))
	for _, a := range c.ClusterDNS {
		dns = append(dns, a.String())
	}
	conf := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            c.NodeIP.String(),
		"port":               10250,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        HealthzPort,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": true},
			"webhook":   map[string]any{"enabled": false},
		},
		"authorization":               map[string]any{"mode": "AlwaysAllow"},
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  "/" + c.cgroupName(),
		"cgroupsPerQOS":               true,
		"failCgroupV1":                false,
		"failSwapOn":                  false,
		"containerRuntimeEndpoint":    "unix://" + l.socket(),
		"imageServiceEndpoint":        "unix://" + l.socket(),
		"podCIDR":                     c.PodCIDR.String(),
		"resolvConf":                  l.resolvConf(),
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		"evictionHard":                evictionHard,
		"crashLoopBackOff":            map[string]any{"maxContainerRestartPeriod": maxRestartBackOff.String()},
		"registerNode":                true,
		"enableServer":                true,
	}
	if len(dns) > 0 {
		conf["clusterDNS"] = dns
	}
	if c.ClusterDomain != "" {
		conf["clusterDomain"] = c.ClusterDomain
	}
	// JSON is YAML, and the kubelet reads either.
	return json.MarshalIndent(conf, "", "  ")
}

// evictionHard are the kubelet's hard eviction thresholds in absolute amounts. Every lab
// node's kubelet measures the filesystem of the state directory, which all nodes share
// with the rest of the machine: with the kubelet's defaults (imagefs.available < 15%,
// nodefs.available < 10%), a developer's disk 85% full put every node under DiskPressure
// and evicted every pod, Strait's and the samples' alike, a state of the machine and not
// of the lab. Memory keeps the kubelet's default.
var evictionHard = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "1Gi",
	"imagefs.available":  "1Gi",
	"nodefs.inodesFree":  "1%",
	"imagefs.inodesFree": "1%",
}

// maxRestartBackOff is the longest the lab's kubelets wait before they restart a
// container that keeps exiting (KubeletConfiguration crashLoopBackOff, beta since 1.35).
const maxRestartBackOff = time.Second

// HealthzPort is the kubelet's health endpoint on the node's loopback (127.0.0.1).
const HealthzPort = 10248

// kubeletArgs is the kubelet's command line beside its config file.
func kubeletArgs(c Config, l layout) []string {
	args := []string{
		"--config=" + l.kubeletConfig(),
		"--kubeconfig=" + l.kubeconfig(),
		"--root-dir=" + l.kubeletRoot(),
		"--cert-dir=" + l.kubeletDir() + "/pki",
		"--hostname-override=" + c.Name,
		"--node-ip=" + nodeIPs(c),
		"--v=1",
	}
	if c.ExternalCloudProvider {
		args = append(args, "--cloud-provider=external")
	}
	if len(c.Labels) > 0 {
		keys := make([]string, 0, len(c.Labels))
		for k := range c.Labels {
			keys = append(keys, k+"="+c.Labels[k])
		}
		sort.Strings(keys)
		args = append(args, "--node-labels="+strings.Join(keys, ","))
	}
	return args
}

// resolvConf is what pods with dnsPolicy Default get and what ClusterFirst pods search
// besides the cluster DNS: nothing of the host's, so no pod asks the host's resolver.
func resolvConf(dns []netip.Addr) string {
	var b strings.Builder
	for _, a := range dns {
		fmt.Fprintf(&b, "nameserver %s\n", a)
	}
	if b.Len() == 0 {
		b.WriteString("# no nameserver: the node has no DNS outside its cluster\n")
	}
	return b.String()
}

// nodeIPs is the kubelet's --node-ip: the node's IPv4 address, and its IPv6 address
// after it on a dual-stack node.
func nodeIPs(c Config) string {
	if c.NodeIP6.IsValid() {
		return c.NodeIP.String() + "," + c.NodeIP6.String()
	}
	return c.NodeIP.String()
}
