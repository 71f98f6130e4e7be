package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/lab/flannel"
	"github.com/straitnet/strait/lab/topology"
)

// flannelManifest is where make images copied flannel's manifest of the pinned release.
func (o Options) flannelManifest() string { return filepath.Join(o.ImageDir, flannel.ManifestFile) }

// ensureFlannel installs flannel into a member as its manifest does, with the lab's
// patches (lab/flannel.Manifest): the cluster's pod CIDR as flannel's Network, its
// masquerade in nftables or iptables as the lab file says, the VXLAN underlay on the
// node's LAN link. Every node's Node.spec.podCIDR is the lab's (the Node is created
// before its kubelet starts), so flanneld's --kube-subnet-mgr leases exactly the /24 the
// topology gave the node.
func (l *Lab) ensureFlannel(ctx context.Context, a *applier, c topology.Cluster, nftables bool) error {
	data, err := os.ReadFile(l.opts.flannelManifest())
	if err != nil {
		return fmt.Errorf("%w (make images copies it there)", err)
	}
	objs, err := flannel.Manifest(data, flannel.Options{Network: c.PodCIDR, NFTables: nftables, Interface: topology.NodeLANLink})
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range objs {
		errs = append(errs, a.create(ctx, obj))
	}
	return errors.Join(errs...)
}

// waitFlannel waits until flanneld runs ready on every node of a member.
func (l *Lab) waitFlannel(ctx context.Context, cluster string, c kubernetes.Interface, timeout time.Duration) error {
	return l.waitWorkloads(ctx, cluster, flannel.Namespace, c, timeout)
}

// flannelOf says whether a member runs flannel, and whether its masquerade is nftables.
func flannelOf(c topology.Cluster) (on, nftables bool) {
	return c.Shape.CNI == topology.CNIFlannel, c.Shape.Masquerade == topology.MasqueradeNFTables
}
