package vxlan_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/vxlan"
	"github.com/straitnet/strait/test/cabletest"
	"github.com/straitnet/strait/test/require"
)

// A device an earlier version made has the kernel's random MAC; the remotes' neighbor
// entries for this gateway's IPv6 VTEP name the derived one. Converge sets it in place,
// without re-creating the device (which would drop the cable for a moment).
func TestAnEarlierDevicesMACIsReplacedInPlace(t *testing.T) {
	require.Root(t)
	n := netns.New(t, "vxmac")
	n.Run(t, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	n.Run(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "eth0")
	n.Run(t, "ip", "link", "set", "eth0", "up")
	n.Run(t, "ip", "link", "add", vxlan.DeviceName, "type", "vxlan", "id", "7301", "local", "198.18.0.1",
		"dstport", "4799", "nolearning")
	n.Run(t, "ip", "link", "set", vxlan.DeviceName, "up")
	before, err := n.NL.LinkByName(vxlan.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	d, err := vxlan.New(vxlan.Config{Routing: cabletest.Routing, Netlink: n.NL})
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr("198.18.0.1")
	if err := d.Converge(context.Background(), cable.Local{ClusterID: "a", IP: ip, Advertised: ip, Port: 4799}, nil); err != nil {
		t.Fatal(err)
	}
	after, err := n.NL.LinkByName(vxlan.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	if after.Attrs().Index != before.Attrs().Index {
		t.Errorf("the device was made again (index %d, was %d)", after.Attrs().Index, before.Attrs().Index)
	}
	if got, want := after.Attrs().HardwareAddr.String(), vxlan.MAC(ip).String(); got != want {
		t.Errorf("MAC %s, want %s", got, want)
	}
}
