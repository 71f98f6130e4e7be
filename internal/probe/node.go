package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
)

// DefaultKubeProxyMetrics is kube-proxy's default --metrics-bind-address: its
// /proxyMode and /configz answer there, on the node's loopback.
const DefaultKubeProxyMetrics = "127.0.0.1:10249"

// NodeFacts is what Node reads on a node.
type NodeFacts struct {
	KubeProxy KubeProxy `json:"kubeProxy"`
	Links     []Link    `json:"links"`
	// StraitChains are the chains of Strait's nftables table (ip strait), sorted; the
	// agent's masquerade bypass is keep-remote-source.
	StraitChains []string `json:"straitChains"`
	// StraitChains6 are the chains of its table ip6 strait, which a node has where it
	// routes IPv6 to other clusters, sorted.
	StraitChains6 []string `json:"straitChains6,omitempty"`
	// Fences are the gateway fence's tables (ip and ip6 strait-fence) the node holds,
	// with the ports their sets let through now; none on a node that runs no cable.
	Fences []Fence `json:"fences,omitempty"`
	// Drops are the rules of the node's other ip, ip6 and inet tables that drop UDP to
	// a port asked about (the cable's, vx-strait's).
	Drops []Drop `json:"drops,omitempty"`
	// LegacyTables are the node's legacy iptables and ip6tables tables ("ip filter"),
	// whose rules Drops does not read.
	LegacyTables []string `json:"legacyTables,omitempty"`
	// NFTError says why the chains, fences or rules could not be listed.
	NFTError string `json:"nftError,omitempty"`
}

// Tables are the nftables tables of Strait's that Node reads: the agent's (ip and ip6)
// and the gateway fence's.
type Tables struct {
	Strait, Fence string
}

// KubeProxy is kube-proxy's mode and masquerade settings as it reports them.
type KubeProxy struct {
	Mode          string `json:"mode,omitempty"`
	MasqueradeBit *int32 `json:"masqueradeBit,omitempty"`
	MasqueradeAll bool   `json:"masqueradeAll,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Link is a network device and its MTU.
type Link struct {
	Name string `json:"name"`
	MTU  int    `json:"mtu"`
}

// Node reads the facts of the node whose network namespace this runs in (the agent's
// container: host network, NET_ADMIN to list nftables): udpPorts are the ports whose
// drops it looks for (the cable's, vx-strait's).
func Node(ctx context.Context, kubeProxyMetrics string, tables Tables, udpPorts []int) NodeFacts {
	var f NodeFacts
	f.KubeProxy = readKubeProxy(ctx, kubeProxyMetrics)
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			f.Links = append(f.Links, Link{Name: i.Name, MTU: i.MTU})
		}
	}
	chains, err := tableChains(tables.Strait, nftables.TableFamilyIPv4)
	chains6, err6 := tableChains(tables.Strait, nftables.TableFamilyIPv6)
	var errFW error
	if c, err := nftables.New(); err != nil {
		errFW = err
	} else {
		f.Fences, f.Drops, errFW = firewall(c, tables.Fence, udpPorts)
	}
	f.LegacyTables = legacyTables("/proc/net")
	if err := errors.Join(err, err6, errFW); err != nil {
		f.NFTError = err.Error()
	}
	f.StraitChains, f.StraitChains6 = chains, chains6
	return f
}

func tableChains(table string, family nftables.TableFamily) ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(family)
	if err != nil {
		return nil, fmt.Errorf("listing nftables chains: %w", err)
	}
	var out []string
	for _, ch := range chains {
		if ch.Table != nil && ch.Table.Name == table {
			out = append(out, ch.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// readKubeProxy asks kube-proxy's metrics endpoint for its mode and configuration.
func readKubeProxy(ctx context.Context, addr string) KubeProxy {
	var kp KubeProxy
	hc := &http.Client{Timeout: 2 * time.Second}
	get := func(path string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return body, err
	}
	mode, err := get("/proxyMode")
	if err != nil {
		kp.Error = fmt.Sprintf("kube-proxy's metrics endpoint %s: %v", addr, err)
		return kp
	}
	kp.Mode = strings.TrimSpace(string(mode))
	body, err := get("/configz")
	if err != nil {
		return kp // the mode is what matters most; old kube-proxies serve no configz
	}
	var cz map[string]struct {
		Mode     string `json:"mode"`
		IPTables struct {
			MasqueradeBit *int32 `json:"masqueradeBit"`
			MasqueradeAll bool   `json:"masqueradeAll"`
		} `json:"iptables"`
		NFTables struct {
			MasqueradeBit *int32 `json:"masqueradeBit"`
			MasqueradeAll bool   `json:"masqueradeAll"`
		} `json:"nftables"`
	}
	if json.Unmarshal(body, &cz) != nil {
		return kp
	}
	for _, c := range cz {
		switch kp.Mode {
		case "nftables":
			kp.MasqueradeBit, kp.MasqueradeAll = c.NFTables.MasqueradeBit, c.NFTables.MasqueradeAll
		default:
			kp.MasqueradeBit, kp.MasqueradeAll = c.IPTables.MasqueradeBit, c.IPTables.MasqueradeAll
		}
	}
	return kp
}

// Flow is a connection the node's conntrack tracks: its original source and destination
// and the destination its answers go to, which is not the source when something on the
// node translated the source (a masquerade).
type Flow struct {
	Protocol uint8  `json:"protocol"`
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	ReplyDst string `json:"replyDst"`
}

// Flows are the node's conntrack entries, IPv4 and IPv6, towards any of dsts.
func Flows(dsts []string) ([]Flow, error) {
	want := map[string]bool{}
	for _, d := range dsts {
		want[d] = true
	}
	out := []Flow{}
	for _, family := range []netlink.InetFamily{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, family)
		if err != nil {
			return nil, fmt.Errorf("reading conntrack: %w", err)
		}
		for _, f := range flows {
			if !want[f.Forward.DstIP.String()] {
				continue
			}
			out = append(out, Flow{Protocol: f.Forward.Protocol, Src: f.Forward.SrcIP.String(), Dst: f.Forward.DstIP.String(), ReplyDst: f.Reverse.DstIP.String()})
		}
	}
	return out, nil
}
