package flannel

import (
	"errors"
	"fmt"
	"maps"

	"github.com/straitnet/strait/lab/image"
)

// FlanneldPath is where flannel's manifest runs flanneld from (its command), and so
// where the image holds it.
const FlanneldPath = "/opt/bin/flanneld"

// UserlandPackages are the Debian packages flanneld execs at run time: in iptables mode
// go-iptables runs iptables, iptables-save and iptables-restore; with EnableNFTables
// knftables runs nft. Their closure brings libc6, which the cgo-linked flanneld needs.
func UserlandPackages() []string { return []string{"iptables", "nftables"} }

// iptablesCommands are the names Debian's iptables package points at iptables-nft
// through update-alternatives in its postinst, which unpacking into a layer does not
// run: without them there is no `iptables` at all.
var iptablesCommands = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// ImageSpec is flanneld's image: the lab's base files, the unpacked userland (the
// closure of UserlandPackages) with the iptables-nft alternatives, and flanneld at
// FlanneldPath. flanneld must be the binary make node-binaries built (cgo: linked against
// the userland's libc6).
func ImageSpec(flanneld []byte, userland image.Files) (image.Spec, error) {
	if len(flanneld) == 0 {
		return image.Spec{}, errors.New("flannel image: empty flanneld")
	}
	for _, bin := range []string{"usr/sbin/xtables-nft-multi", "usr/sbin/nft"} {
		if _, ok := userland[bin]; !ok {
			return image.Spec{}, fmt.Errorf("flannel image: no %s in the userland (Debian's %v)", bin, UserlandPackages())
		}
	}
	userland = maps.Clone(userland)
	for _, name := range iptablesCommands {
		if err := userland.Add(image.Symlink("usr/sbin/"+name, "xtables-nft-multi")); err != nil {
			return image.Spec{}, err
		}
	}
	bin := image.Files{}
	if err := bin.Add(image.File(FlanneldPath[1:], 0o755, flanneld)); err != nil {
		return image.Spec{}, err
	}
	return image.Spec{
		Ref:        Image,
		Layers:     []image.Files{image.BaseFiles(), userland, bin},
		Entrypoint: []string{FlanneldPath},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "flanneld",
			"org.opencontainers.image.version": Version,
			"org.opencontainers.image.source":  Module,
		},
	}, nil
}
