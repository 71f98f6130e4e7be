package flannel

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// flanneld's subnet.env on a node of a cluster with pods 10.8.0.0/16, --ip-masq, VXLAN
// over a 1500-byte LAN.
const nodeSubnetEnv = `FLANNEL_NETWORK=10.8.0.0/16
FLANNEL_SUBNET=10.8.2.1/24
FLANNEL_MTU=1450
FLANNEL_IPMASQ=true
`

func TestParseSubnetEnv(t *testing.T) {
	env, err := ParseSubnetEnv([]byte(nodeSubnetEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := SubnetEnv{Network: netip.MustParsePrefix("10.8.0.0/16"), Subnet: netip.MustParsePrefix("10.8.2.1/24"), MTU: 1450, IPMasq: true}
	if env != want {
		t.Fatalf("got %+v, want %+v", env, want)
	}
}

func TestParseSubnetEnvNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      []string
	}{
		{"empty", "", []string{"FLANNEL_NETWORK: missing", "FLANNEL_SUBNET: missing", "FLANNEL_MTU: missing", "FLANNEL_IPMASQ: missing"}},
		{"bad subnet", strings.Replace(nodeSubnetEnv, "10.8.2.1/24", "10.8.2.1", 1), []string{`FLANNEL_SUBNET="10.8.2.1": not an IPv4 prefix`}},
		{"ipv6 network", strings.Replace(nodeSubnetEnv, "10.8.0.0/16", "fd00::/64", 1), []string{`FLANNEL_NETWORK="fd00::/64": not an IPv4 prefix`}},
		{"bad mtu", strings.Replace(nodeSubnetEnv, "1450", "14500000", 1), []string{`FLANNEL_MTU="14500000": not an MTU`}},
		{"bad masq", strings.Replace(nodeSubnetEnv, "IPMASQ=true", "IPMASQ=yes", 1), []string{`FLANNEL_IPMASQ="yes": not true or false`}},
		{"subnet outside", strings.Replace(nodeSubnetEnv, "10.8.2.1/24", "10.9.2.1/24", 1), []string{`FLANNEL_SUBNET="10.9.2.1/24": outside FLANNEL_NETWORK 10.8.0.0/16`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSubnetEnv([]byte(tc.env))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseNetConfDefaultsAndRefusals(t *testing.T) {
	n, err := ParseNetConf([]byte(`{"cniVersion":"1.0.0","name":"cbr0","type":"flannel"}`))
	if err != nil {
		t.Fatal(err)
	}
	if n.SubnetFile != DefaultSubnetFile || n.DataDir != DefaultDataDir {
		t.Fatalf("defaults: subnetFile %q dataDir %q", n.SubnetFile, n.DataDir)
	}
	for conf, want := range map[string]string{
		`{"name":"n","type":"flannel","delegate":{"name":"x"}}`:          "delegate.name: must not be set",
		`{"name":"n","type":"flannel","delegate":{"ipam":{}}}`:           "delegate.ipam: must not be set",
		`{"name":"n","type":"flannel","delegate":{"type":7}}`:            "delegate.type 7: must be a string",
		`{"name":"n","type":"flannel","delegate":{"type":"bridge"}`:      "flannel network configuration",
		`{"name":"n","type":"flannel","subnetFile":"/x","dataDir":"/y"}`: "",
	} {
		_, err := ParseNetConf([]byte(conf))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", conf, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want one saying %q", conf, err, want)
		}
	}
}

// The lab's conflist entry for a flannel node (lab/node) and what the bridge plugin gets.
func TestDelegateOfTheLabsConflist(t *testing.T) {
	for _, tc := range []struct {
		name, conf, env, want string
	}{{
		name: "flanneld masquerades: the bridge does not",
		conf: `{"cniVersion":"1.0.0","name":"strait-lab","type":"flannel","dataDir":"/s/cni/flannel",
			"ipam":{"dataDir":"/s/cni/networks"},"delegate":{"hairpinMode":true,"isDefaultGateway":true}}`,
		env: nodeSubnetEnv,
		want: `{"cniVersion":"1.0.0","hairpinMode":true,"ipMasq":false,"ipam":{"dataDir":"/s/cni/networks",` +
			`"ranges":[[{"subnet":"10.8.2.0/24"}]],"routes":[{"dst":"10.8.0.0/16"}],"type":"host-local"},` +
			`"isDefaultGateway":true,"isGateway":true,"mtu":1450,"name":"strait-lab","type":"bridge"}`,
	}, {
		name: "flanneld without --ip-masq: the bridge masquerades",
		conf: `{"name":"cbr0","type":"flannel"}`,
		env:  strings.Replace(nodeSubnetEnv, "IPMASQ=true", "IPMASQ=false", 1),
		want: `{"ipMasq":true,"ipam":{"ranges":[[{"subnet":"10.8.2.0/24"}]],"routes":[{"dst":"10.8.0.0/16"}],"type":"host-local"},` +
			`"isGateway":true,"mtu":1450,"name":"cbr0","type":"bridge"}`,
	}, {
		name: "given settings win; given routes stay before the network's",
		conf: `{"name":"cbr0","type":"flannel","ipam":{"type":"static-ish","routes":[{"dst":"0.0.0.0/0"}]},
			"delegate":{"ipMasq":true,"mtu":1400,"isGateway":false,"bridge":"br9"},"runtimeConfig":{"portMappings":[]}}`,
		env: nodeSubnetEnv,
		want: `{"bridge":"br9","ipMasq":true,"ipam":{"ranges":[[{"subnet":"10.8.2.0/24"}]],` +
			`"routes":[{"dst":"0.0.0.0/0"},{"dst":"10.8.0.0/16"}],"type":"static-ish"},"isGateway":false,"mtu":1400,` +
			`"name":"cbr0","runtimeConfig":{"portMappings":[]},"type":"bridge"}`,
	}, {
		name: "another delegate gets no isGateway",
		conf: `{"name":"cbr0","type":"flannel","delegate":{"type":"ipvlan","master":"eth0"}}`,
		env:  nodeSubnetEnv,
		want: `{"ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.8.2.0/24"}]],"routes":[{"dst":"10.8.0.0/16"}],"type":"host-local"},` +
			`"master":"eth0","mtu":1450,"name":"cbr0","type":"ipvlan"}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ParseNetConf([]byte(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			env, err := ParseSubnetEnv([]byte(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			d, err := Delegate(n, env)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("delegate:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDelegateLeavesTheConfigurationAlone(t *testing.T) {
	n, err := ParseNetConf([]byte(`{"name":"cbr0","type":"flannel","ipam":{"dataDir":"/d"},"delegate":{"hairpinMode":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := ParseSubnetEnv([]byte(nodeSubnetEnv))
	if _, err := Delegate(n, env); err != nil {
		t.Fatal(err)
	}
	if len(n.Delegate) != 1 || len(n.IPAM) != 1 {
		t.Fatalf("Delegate changed its input: delegate %v ipam %v", n.Delegate, n.IPAM)
	}
}

func TestDelegateRefusesRoutesThatAreNotAList(t *testing.T) {
	n, err := ParseNetConf([]byte(`{"name":"cbr0","type":"flannel","ipam":{"routes":{"dst":"0.0.0.0/0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := ParseSubnetEnv([]byte(nodeSubnetEnv))
	if _, err := Delegate(n, env); err == nil || !strings.Contains(err.Error(), "ipam.routes") {
		t.Fatalf("error %v, want one naming ipam.routes", err)
	}
}
