package flannel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
)

// Defaults of the plugin's configuration, flannel's own plugin's: flanneld writes the
// subnet file under /run/flannel (a hostPath of its DaemonSet), and the plugin keeps each
// pod's delegate configuration under DataDir so DEL undoes exactly what ADD did even after
// flanneld rewrote subnet.env.
const (
	DefaultSubnetFile = "/run/flannel/subnet.env"
	DefaultDataDir    = "/var/lib/cni/flannel"
)

// SubnetEnv is what flanneld writes to subnet.env for the CNI plugin (IPv4 only, as the
// lab is).
type SubnetEnv struct {
	// Network is the whole cluster pod network (FLANNEL_NETWORK).
	Network netip.Prefix
	// Subnet is this node's lease (FLANNEL_SUBNET, written as the bridge's address with
	// the lease's length, like 10.8.1.1/24).
	Subnet netip.Prefix
	// MTU is the pods' MTU: the underlay's less the VXLAN overhead (FLANNEL_MTU).
	MTU int
	// IPMasq says flanneld masquerades pod traffic leaving the pod network itself
	// (FLANNEL_IPMASQ, from --ip-masq), so the bridge plugin must not.
	IPMasq bool
}

// ParseSubnetEnv reads subnet.env. Every key the plugin needs must be there; each error
// names the key, the value and what is wrong. Unknown keys (the IPv6 ones) are ignored.
func ParseSubnetEnv(data []byte) (SubnetEnv, error) {
	var env SubnetEnv
	seen := map[string]bool{}
	var errs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		bad := func(why string) { errs = append(errs, fmt.Sprintf("%s=%q: %s", key, value, why)) }
		switch key {
		case "FLANNEL_NETWORK", "FLANNEL_SUBNET":
			p, err := netip.ParsePrefix(value)
			if err != nil || !p.Addr().Is4() {
				bad("not an IPv4 prefix")
				continue
			}
			if key == "FLANNEL_NETWORK" {
				env.Network = p.Masked()
			} else {
				env.Subnet = p
			}
		case "FLANNEL_MTU":
			mtu, err := strconv.Atoi(value)
			if err != nil || mtu < 576 || mtu > 65535 {
				bad("not an MTU (576-65535)")
				continue
			}
			env.MTU = mtu
		case "FLANNEL_IPMASQ":
			masq, err := strconv.ParseBool(value)
			if err != nil {
				bad("not true or false")
				continue
			}
			env.IPMasq = masq
		default:
			continue
		}
		seen[key] = true
	}
	if err := sc.Err(); err != nil {
		return env, err
	}
	for _, key := range []string{"FLANNEL_NETWORK", "FLANNEL_SUBNET", "FLANNEL_MTU", "FLANNEL_IPMASQ"} {
		if !seen[key] && !hasError(errs, key) {
			errs = append(errs, key+": missing")
		}
	}
	if len(errs) == 0 && !env.Network.Contains(env.Subnet.Addr()) {
		errs = append(errs, fmt.Sprintf("FLANNEL_SUBNET=%q: outside FLANNEL_NETWORK %s", env.Subnet, env.Network))
	}
	if len(errs) > 0 {
		return env, fmt.Errorf("subnet.env: %s", strings.Join(errs, "; "))
	}
	return env, nil
}

func hasError(errs []string, key string) bool {
	for _, e := range errs {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// NetConf is the plugin's network configuration, flannel's plugin's format: the conflist
// names the plugin (type flannel), optionally the subnet file, the data directory, IPAM
// settings to merge (a dataDir, extra routes) and delegate settings (hairpinMode,
// isDefaultGateway, ...).
type NetConf struct {
	CNIVersion    string         `json:"cniVersion,omitempty"`
	Name          string         `json:"name"`
	Type          string         `json:"type"`
	SubnetFile    string         `json:"subnetFile,omitempty"`
	DataDir       string         `json:"dataDir,omitempty"`
	IPAM          map[string]any `json:"ipam,omitempty"`
	Delegate      map[string]any `json:"delegate,omitempty"`
	RuntimeConfig map[string]any `json:"runtimeConfig,omitempty"`
}

// ParseNetConf reads the configuration the runtime hands the plugin, with flannel's
// defaults for the subnet file and the data directory.
func ParseNetConf(data []byte) (NetConf, error) {
	n := NetConf{SubnetFile: DefaultSubnetFile, DataDir: DefaultDataDir}
	if err := json.Unmarshal(data, &n); err != nil {
		return n, fmt.Errorf("flannel network configuration: %w", err)
	}
	if n.Delegate != nil {
		if t, ok := n.Delegate["type"]; ok {
			if _, isString := t.(string); !isString {
				return n, fmt.Errorf("delegate.type %v: must be a string (a plugin's name)", t)
			}
		}
		// flannel sets these two: a value here would be silently replaced.
		for _, key := range []string{"name", "ipam"} {
			if _, ok := n.Delegate[key]; ok {
				return n, fmt.Errorf("delegate.%s: must not be set, the flannel plugin sets it (use the top-level %q)", key, key)
			}
		}
	}
	return n, nil
}

// Delegate is the configuration the plugin hands to the delegate plugin (bridge unless
// delegate.type says otherwise), as flannel's own plugin builds it: the delegate settings
// given, then, where not given, the network's name, masquerade by the bridge only when
// flanneld does not masquerade (ipMasq = !FLANNEL_IPMASQ), FLANNEL_MTU, the bridge as the
// pods' gateway; and IPAM (host-local unless ipam.type says otherwise) handing out this
// node's subnet, with a route to the whole flannel network beside any routes given.
func Delegate(n NetConf, env SubnetEnv) (map[string]any, error) {
	d := maps.Clone(n.Delegate)
	if d == nil {
		d = map[string]any{}
	}
	d["name"] = n.Name
	setDefault(d, "type", "bridge")
	setDefault(d, "ipMasq", !env.IPMasq)
	setDefault(d, "mtu", env.MTU)
	if d["type"] == "bridge" {
		setDefault(d, "isGateway", true)
	}
	if n.CNIVersion != "" {
		d["cniVersion"] = n.CNIVersion
	}
	if n.RuntimeConfig != nil {
		d["runtimeConfig"] = n.RuntimeConfig
	}
	ipam := maps.Clone(n.IPAM)
	if ipam == nil {
		ipam = map[string]any{}
	}
	setDefault(ipam, "type", "host-local")
	ipam["ranges"] = []any{[]any{map[string]any{"subnet": env.Subnet.Masked().String()}}}
	var routes []any
	if given, ok := ipam["routes"]; ok {
		list, isList := given.([]any)
		if !isList {
			return nil, fmt.Errorf("ipam.routes %v: must be a list of routes", given)
		}
		routes = append(routes, list...)
	}
	ipam["routes"] = append(routes, map[string]any{"dst": env.Network.String()})
	d["ipam"] = ipam
	return d, nil
}

func setDefault(m map[string]any, key string, value any) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}
