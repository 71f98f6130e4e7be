package flannel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/straitnet/strait/lab/manifest"
)

// Names in flannel's manifest the lab patches.
const (
	configMapName = "kube-flannel-cfg"
	daemonSetName = "kube-flannel-ds"
	containerName = "kube-flannel"
	netConfKey    = "net-conf.json"
	cniConfKey    = "cni-conf.json"
)

// Options are what differs between the lab's flannel clusters.
type Options struct {
	// Network is the cluster's pod CIDR: flannel's Network, which holds every node's
	// Node.spec.podCIDR (the lab sets them; --kube-subnet-mgr takes each node's lease
	// from there).
	Network netip.Prefix
	// NFTables makes flanneld program its masquerade and forward rules as nftables
	// (EnableNFTables: tables flannel-ipv4/-ipv6) instead of iptables (chains
	// FLANNEL-POSTRTG and FLANNEL-FWD through iptables-nft).
	NFTables bool
	// Interface is the node's link flanneld uses as the VXLAN underlay (--iface): gateway
	// nodes have two, and without a default route flanneld would find none.
	Interface string
}

// Manifest is flannel's own manifest (Documentation/kube-flannel.yml of the pinned
// module) with what the lab changes, in the manifest's order:
//   - net-conf.json: Network is the cluster's pod CIDR and EnableNFTables as asked; the
//     backend stays upstream's VXLAN;
//   - cni-conf.json goes: the lab's nodes get their conflist from lab/node, with the
//     node's own data directory in it;
//   - the DaemonSet's init containers go (install-cni-plugin copies flannel's plugin to
//     /opt/cni/bin, install-cni the conflist to /etc/cni/net.d: a lab node's plugins
//     are in the lab's bin/node, its CNI configuration under its state directory), and
//     with them their two hostPath volumes;
//   - flanneld runs the local image (pull policy Never) with --iface added; upstream's
//     --ip-masq and --kube-subnet-mgr stay (an error if upstream lost them).
//
// Everything else (RBAC, /run/flannel, the xtables lock, NET_ADMIN and NET_RAW) is
// upstream's.
func Manifest(upstream []byte, o Options) ([]*unstructured.Unstructured, error) {
	if !o.Network.IsValid() || !o.Network.Addr().Is4() {
		return nil, fmt.Errorf("flannel network %q: must be an IPv4 prefix", o.Network)
	}
	if o.Interface == "" {
		return nil, errors.New("flannel interface: empty (flanneld's --iface)")
	}
	objs, err := manifest.Decode(upstream)
	if err != nil {
		return nil, fmt.Errorf("flannel manifest: %w", err)
	}
	var cm, ds bool
	for i, obj := range objs {
		var err error
		switch {
		case obj.GetKind() == "ConfigMap" && obj.GetName() == configMapName:
			cm = true
			objs[i], err = patchTyped(obj, &corev1.ConfigMap{}, func(c *corev1.ConfigMap) error { return patchConfig(c, o) })
		case obj.GetKind() == "DaemonSet" && obj.GetName() == daemonSetName:
			ds = true
			objs[i], err = patchTyped(obj, &appsv1.DaemonSet{}, func(d *appsv1.DaemonSet) error { return patchDaemonSet(d, o) })
		}
		if err != nil {
			return nil, fmt.Errorf("flannel manifest %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if !cm || !ds {
		return nil, fmt.Errorf("flannel manifest: want ConfigMap %s and DaemonSet %s (found ConfigMap: %v, DaemonSet: %v)",
			configMapName, daemonSetName, cm, ds)
	}
	return objs, nil
}

func patchConfig(c *corev1.ConfigMap, o Options) error {
	var conf map[string]any
	if err := json.Unmarshal([]byte(c.Data[netConfKey]), &conf); err != nil {
		return fmt.Errorf("%s: %w", netConfKey, err)
	}
	backend, _ := conf["Backend"].(map[string]any)
	if backend["Type"] != "vxlan" {
		return fmt.Errorf("%s: Backend %v, the lab expects upstream's vxlan", netConfKey, conf["Backend"])
	}
	conf["Network"] = o.Network.String()
	conf["EnableNFTables"] = o.NFTables
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	c.Data[netConfKey] = string(data) + "\n"
	delete(c.Data, cniConfKey)
	return nil
}

func patchDaemonSet(d *appsv1.DaemonSet, o Options) error {
	spec := &d.Spec.Template.Spec
	spec.InitContainers = nil
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.HostPath != nil && (v.HostPath.Path == "/opt/cni/bin" || v.HostPath.Path == "/etc/cni/net.d")
	})
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == containerName })
	if i < 0 {
		return fmt.Errorf("no container %s", containerName)
	}
	c := &spec.Containers[i]
	for _, arg := range []string{"--ip-masq", "--kube-subnet-mgr"} {
		if !slices.Contains(c.Args, arg) {
			return fmt.Errorf("container %s: args %v lack %s", containerName, c.Args, arg)
		}
	}
	c.Image, c.ImagePullPolicy = Image, corev1.PullNever
	c.Args = append(c.Args, "--iface="+o.Interface)
	return nil
}

// patchTyped converts obj to T, patches it and converts it back.
func patchTyped[T any](obj *unstructured.Unstructured, typed *T, patch func(*T) error) (*unstructured.Unstructured, error) {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, err
	}
	if err := patch(typed); err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: m}
	// The typed objects of the manifest carry their kind in the YAML, not in the Go type.
	out.SetAPIVersion(obj.GetAPIVersion())
	out.SetKind(obj.GetKind())
	return out, nil
}
