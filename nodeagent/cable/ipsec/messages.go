package ipsec

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/straitnet/strait/nodeagent/cable"
)

const (
	// ConnPrefix starts the name of every connection the driver loads into charon.
	ConnPrefix = "strait-"
	// SharedKeyID names the driver's pre-shared key in charon.
	SharedKeyID = "strait-psk"
	// dpdDelay is how often an idle peer is probed; a dead one is noticed after a few
	// retransmits.
	dpdDelay = "10s"
)

// ConnName is the name of the connection (and its one child) to a remote cluster.
func ConnName(clusterID string) string { return ConnPrefix + clusterID }

// clusterOf is the remote cluster a connection name is for, or "" when it is not ours.
func clusterOf(conn string) (string, bool) {
	return strings.CutPrefix(conn, ConnPrefix)
}

// initiates says whether local initiates the connection to remote. A gateway behind
// masquerade only initiates whatever the cluster IDs say: nothing can reach it until its
// own packets opened a mapping in the NAT. Otherwise the cluster whose ID sorts first
// does, so the two ends never race to create duplicate SAs (and, both behind
// masquerade, neither reaches the other: the agent reports that on the Peer).
func initiates(local cable.Local, remote cable.Remote) bool {
	if local.BehindMasquerade != remote.BehindMasquerade {
		return local.BehindMasquerade
	}
	return local.ClusterID < remote.ClusterID
}

// conn is a load-conn section.
type conn struct {
	Version     string           `vici:"version"`
	LocalAddrs  []string         `vici:"local_addrs"`
	RemoteAddrs []string         `vici:"remote_addrs"`
	LocalPort   string           `vici:"local_port"`
	RemotePort  string           `vici:"remote_port"`
	Encap       string           `vici:"encap"`
	Mobike      string           `vici:"mobike"`
	DPDDelay    string           `vici:"dpd_delay"`
	Local       authSection      `vici:"local"`
	Remote      authSection      `vici:"remote"`
	Children    map[string]child `vici:"children"`
}

type authSection struct {
	Auth string `vici:"auth"`
	ID   string `vici:"id"`
}

type child struct {
	LocalTS     []string `vici:"local_ts"`
	RemoteTS    []string `vici:"remote_ts"`
	Mode        string   `vici:"mode"`
	StartAction string   `vici:"start_action"`
	DPDAction   string   `vici:"dpd_action"`
	CloseAction string   `vici:"close_action"`
}

// connFor is the connection to remote as charon is told it. IDs are cluster IDs, not
// addresses, so a new gateway of the same cluster is the same peer.
func connFor(local cable.Local, remote cable.Remote) (conn, error) {
	if !local.IP.IsValid() || (!remote.IP.IsValid() && !remote.BehindMasquerade) {
		return conn{}, fmt.Errorf("remote %s: gateway addresses must be set", remote.ClusterID)
	}
	if len(remote.CIDRs) == 0 || len(local.CIDRs) == 0 {
		return conn{}, fmt.Errorf("remote %s: both ends need CIDRs", remote.ClusterID)
	}
	ch := child{
		LocalTS:     prefixes(local.CIDRs),
		RemoteTS:    prefixes(remote.CIDRs),
		Mode:        "tunnel",
		StartAction: "none",
		DPDAction:   "clear",
		CloseAction: "none",
	}
	if initiates(local, remote) {
		ch.DPDAction = "restart"
		ch.CloseAction = "start"
	}
	// A remote behind masquerade is taken from any address and port: those are its
	// NAT's, learnt from its IKE_SA_INIT, and the PSK and its ID authenticate it.
	remoteAddr, remotePort := "%any", ""
	if remote.IP.IsValid() {
		remoteAddr, remotePort = remote.IP.Unmap().String(), fmt.Sprint(remote.Port)
	}
	return conn{
		Version:     "2",
		LocalAddrs:  []string{local.IP.Unmap().String()},
		RemoteAddrs: []string{remoteAddr},
		LocalPort:   fmt.Sprint(local.Port),
		RemotePort:  remotePort,
		Encap:       "yes",
		Mobike:      "no",
		DPDDelay:    dpdDelay,
		Local:       authSection{Auth: "psk", ID: local.ClusterID},
		Remote:      authSection{Auth: "psk", ID: remote.ClusterID},
		Children:    map[string]child{ConnName(remote.ClusterID): ch},
	}, nil
}

func prefixes(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Masked().String())
	}
	return out
}

// sharedKey is a load-shared message.
type sharedKey struct {
	ID   string `vici:"id"`
	Type string `vici:"type"`
	Data string `vici:"data"`
}

// ikeSA is what the driver reads of a list-sa event's IKE SA.
type ikeSA struct {
	UniqueID    string             `vici:"uniqueid"`
	State       string             `vici:"state"`
	LocalHost   string             `vici:"local-host"`
	RemoteHost  string             `vici:"remote-host"`
	RemotePort  string             `vici:"remote-port"`
	Established string             `vici:"established"`
	ChildSAs    map[string]childSA `vici:"child-sas"`
}

type childSA struct {
	Name     string `vici:"name"`
	UniqueID string `vici:"uniqueid"`
	State    string `vici:"state"`
	BytesIn  string `vici:"bytes-in"`
	BytesOut string `vici:"bytes-out"`
}
