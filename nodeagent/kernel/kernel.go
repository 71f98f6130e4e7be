package kernel

import (
	"context"
	"net/netip"
)

// Kernel is the thin seam over one network namespace's data plane. Implementations do
// exactly the one thing each method names; diffing and ordering live in Apply. Deleting
// something that does not exist returns nil.
type Kernel interface {
	// Links lists every link with its addresses and MAC; FDB and the permanent
	// Neighbors are filled for VXLAN links.
	Links(ctx context.Context) ([]Link, error)
	// AddLink creates a link (only VXLAN is supported) with its MTU, MAC and up state;
	// it does not add addresses, FDB or neighbor entries.
	AddLink(ctx context.Context, l Link) error
	// SetLink sets an existing link's MTU and up state.
	SetLink(ctx context.Context, name string, mtu int, up bool) error
	// SetMAC sets an existing link's hardware address (also while it is up).
	SetMAC(ctx context.Context, name, mac string) error
	// DeleteLink removes a link.
	DeleteLink(ctx context.Context, name string) error

	AddAddr(ctx context.Context, link string, p netip.Prefix) error
	DelAddr(ctx context.Context, link string, p netip.Prefix) error
	AddFDB(ctx context.Context, link string, dst netip.Addr) error
	DelFDB(ctx context.Context, link string, dst netip.Addr) error
	// SetNeighbor adds n as a permanent entry or replaces the entry for its IP (also one
	// the kernel learned).
	SetNeighbor(ctx context.Context, link string, n Neighbor) error
	DelNeighbor(ctx context.Context, link string, n Neighbor) error

	// Routes lists the routes of both families with the given protocol in every table.
	Routes(ctx context.Context, protocol int) ([]Route, error)
	// ReplaceRoute adds r or replaces the route with the same table and destination (in
	// the family of r.Dst).
	ReplaceRoute(ctx context.Context, r Route) error
	DeleteRoute(ctx context.Context, r Route) error

	// Rules lists the policy rules of both families that have a priority and a table,
	// each with its Family set.
	Rules(ctx context.Context) ([]Rule, error)
	AddRule(ctx context.Context, r Rule) error
	DeleteRule(ctx context.Context, r Rule) error

	// Sysctl reads a key under /proc/sys; a missing key is an error.
	Sysctl(ctx context.Context, key string) (string, error)
	SetSysctl(ctx context.Context, key, value string) error

	// NFTable reads our nftables table of the family (rules carry only Text); nil when
	// absent.
	NFTable(ctx context.Context, family Family, name string) (*NFTable, error)
	// NFTApply runs tx as one nftables transaction: it all happens or nothing does.
	NFTApply(ctx context.Context, tx NFTTx) error
}

// NFTTx is one nftables transaction on one table, applied in field order.
type NFTTx struct {
	Table string
	// Family of the table; the zero Family is IPv4.
	Family Family
	// DeleteTable removes the table if present.
	DeleteTable bool
	// Create makes the table with every set, element, chain and rule it lists.
	Create *NFTable
	// Elements adds and removes elements of existing sets.
	Elements []NFTElementsChange
	// Chains are existing chains whose rules are replaced by the listed ones.
	Chains []NFTChain
}

// NFTElementsChange removes, then adds elements of one set (a changed map value is a
// delete and an add); Set carries its definition
// (its Elements field is ignored).
type NFTElementsChange struct {
	Set    NFTSet
	Add    []NFTElement
	Delete []NFTElement
}

// Empty says whether the transaction does nothing.
func (tx NFTTx) Empty() bool {
	return !tx.DeleteTable && tx.Create == nil && len(tx.Elements) == 0 && len(tx.Chains) == 0
}
