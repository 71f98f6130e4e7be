package cabletest

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/nodeagent/cable"
)

// dumpKernel is a stable text dump of what a driver may change in the gateway's namespace:
// links (with index, so a recreated device shows), addresses, routes in Strait's table and
// FDB entries.
func dumpKernel(r cable.Routing) (string, error) {
	var lines []string
	links, err := netlink.LinkList()
	if err != nil {
		return "", err
	}
	for _, l := range links {
		a := l.Attrs()
		lines = append(lines, fmt.Sprintf("link %d %s %s mtu %d up=%v", a.Index, a.Name, l.Type(), a.MTU, a.Flags&(1<<0) != 0))
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return "", err
		}
		for _, ad := range addrs {
			if ad.IP.IsLinkLocalUnicast() {
				continue
			}
			lines = append(lines, fmt.Sprintf("addr %s %s", a.Name, ad.IPNet))
		}
		fdb, err := netlink.NeighList(a.Index, unix.AF_BRIDGE)
		if err != nil {
			return "", err
		}
		for _, n := range fdb {
			if n.IP != nil {
				lines = append(lines, fmt.Sprintf("fdb %s %s dst %s", a.Name, n.HardwareAddr, n.IP))
			}
		}
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: r.Table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return "", err
	}
	for _, rt := range routes {
		lines = append(lines, "route "+routeString(rt))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

func routeString(rt netlink.Route) string {
	name := fmt.Sprint(rt.LinkIndex)
	if l, err := netlink.LinkByIndex(rt.LinkIndex); err == nil {
		name = l.Attrs().Name
	}
	return fmt.Sprintf("%s via %s dev %s src %s table %d proto %d", rt.Dst, rt.Gw, name, rt.Src, rt.Table, rt.Protocol)
}

// listFiles lists the files under root.
func listFiles(root string) (string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return strings.Join(files, "\n"), err
}
