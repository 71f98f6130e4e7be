package kernel

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Expression builders for the few matches the agent's rules use. Each returns the
// expressions of one match; a rule is the concatenation of matches and a statement.

// Register numbers (nf_tables: 1 is the first 16-byte register, 8 the first 4-byte one,
// which overlaps it, so a concatenation is built in 8, 9, …).
const (
	reg1    = 1
	reg3    = 3
	reg32_0 = 8
	reg32_1 = 9
	reg32_4 = 12
	reg32_5 = 13
)

// DaddrInSet matches "ip daddr @set".
func DaddrInSet(set string) []expr.Any { return DaddrInSetOf(IPv4, set) }

// SaddrInSet matches "ip saddr @set".
func SaddrInSet(set string) []expr.Any { return SaddrInSetOf(IPv4, set) }

// DaddrInSetOf matches "ip daddr @set" in a table of family ip, "ip6 daddr @set" in one
// of family ip6.
func DaddrInSetOf(f Family, set string) []expr.Any {
	return []expr.Any{addrPayload(f, reg1, false), &expr.Lookup{SourceRegister: reg1, SetName: set}}
}

// SaddrInSetOf matches "ip saddr @set" or "ip6 saddr @set".
func SaddrInSetOf(f Family, set string) []expr.Any {
	return []expr.Any{addrPayload(f, reg1, true), &expr.Lookup{SourceRegister: reg1, SetName: set}}
}

// addrPayload loads the packet's source or destination address into reg: bytes 12 and
// 16 of the IPv4 header, 8 and 24 of the IPv6 header (16 bytes, one whole register).
func addrPayload(f Family, reg uint32, source bool) *expr.Payload {
	if f.Or4() == IPv6 {
		off := uint32(24)
		if source {
			off = 8
		}
		return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 16}
	}
	off := uint32(16)
	if source {
		off = 12
	}
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4}
}

// TCPSyn matches "tcp flags & (syn|rst) == syn".
func TCPSyn() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 1, Mask: []byte{0x02 | 0x04}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{0x02}},
	}
}

// CtStateNew matches "ct state new": the first packet of a connection, the only one NAT
// chains see.
func CtStateNew() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, expr.CtStateBitNEW), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: make([]byte, 4)},
	}
}

// ClearMarkBits is "meta mark set meta mark & ~bits".
func ClearMarkBits(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ^bits), Xor: make([]byte, 4)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1},
	}
}

// ClampMSSToRoute is "tcp option maxseg size set rt mtu". The route's MSS is loaded in
// host byte order and the option is written in network order, so it is converted in
// between as nft does (without it the kernel sees a larger MSS and, as it only ever
// lowers the option, leaves it alone).
func ClampMSSToRoute() []expr.Any {
	return []expr.Any{
		&expr.Rt{Register: reg1, Key: expr.RtTCPMSS},
		&expr.Byteorder{SourceRegister: reg1, DestRegister: reg1, Op: expr.ByteorderHton, Len: 2, Size: 2},
		&expr.Exthdr{SourceRegister: reg1, Type: 2, Offset: 2, Len: 2, Op: expr.ExthdrOpTcpopt},
	}
}

// SNATToSaddr is "snat to ip saddr": the identity mapping. It binds the connection's
// source NAT without changing it (the port too, unless another connection holds the
// same tuple, as for any binding), so no later NAT chain at the hook translates it.
func SNATToSaddr() []expr.Any { return SNATToSaddrOf(IPv4) }

// SNATToSaddrOf is SNATToSaddr in a table of family f: "snat ip6 to ip6 saddr" for IPv6,
// the NAT of family NFPROTO_IPV6 on the IPv6 header's source.
func SNATToSaddrOf(f Family) []expr.Any {
	return []expr.Any{
		addrPayload(f, reg1, true),
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: uint32(f.nfproto()), RegAddrMin: reg1},
	}
}

// SNATSaddrMap is "snat to ip saddr map @m".
func SNATSaddrMap(m string) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Lookup{SourceRegister: reg1, DestRegister: reg1, IsDestRegSet: true, SetName: m},
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1},
	}
}

// SNATHashMap is "snat to jhash ip saddr mod n seed s map @m": one stable address of
// n per source.
func SNATHashMap(m string, n, seed uint32) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Hash{SourceRegister: reg1, DestRegister: reg1, Length: 4, Modulus: n, Seed: seed, Type: expr.HashTypeJenkins},
		&expr.Lookup{SourceRegister: reg1, DestRegister: reg1, IsDestRegSet: true, SetName: m},
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1},
	}
}

// DNATDaddrMap is "dnat to ip daddr map @m".
func DNATDaddrMap(m string) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: reg1, DestRegister: reg1, IsDestRegSet: true, SetName: m},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1},
	}
}

// DNATDaddrPortMap is "dnat to ip daddr map @addrs : ip daddr . th dport map @ports":
// the destination through addrs and its port through ports (a service's port to its
// endpoints' target port). A packet whose destination and port are not in both maps is
// not translated.
func DNATDaddrPortMap(addrs, ports string) []expr.Any {
	return append([]expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: reg1, DestRegister: reg1, IsDestRegSet: true, SetName: addrs},
	}, portDNAT(ports)...)
}

// DNATDaddrSlotPortMap is "dnat to ip daddr . numgen random mod n map @addrs : ip daddr
// . th dport map @ports": like DNATDaddrPortMap, to a random one of the n slots a
// destination has in addrs, each slot holding one endpoint.
func DNATDaddrSlotPortMap(addrs string, n uint32, ports string) []expr.Any {
	return append([]expr.Any{
		&expr.Payload{DestRegister: reg32_0, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Numgen{Register: reg32_1, Modulus: n, Type: unix.NFT_NG_RANDOM},
		&expr.Lookup{SourceRegister: reg32_0, DestRegister: reg1, IsDestRegSet: true, SetName: addrs},
	}, portDNAT(ports)...)
}

// DNATDaddrHashSlotPortMap is "dnat to ip daddr . jhash ip saddr mod n seed s map @addrs
// : ip daddr . th dport map @ports": like DNATDaddrSlotPortMap, the slot picked by a hash
// of the source address instead of at random, so that one source keeps reaching one
// endpoint (a service's ClientIP session affinity).
func DNATDaddrHashSlotPortMap(addrs string, n, seed uint32, ports string) []expr.Any {
	return append([]expr.Any{
		&expr.Payload{DestRegister: reg32_0, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Payload{DestRegister: reg32_1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Hash{SourceRegister: reg32_1, DestRegister: reg32_1, Length: 4, Modulus: n, Seed: seed, Type: expr.HashTypeJenkins},
		&expr.Lookup{SourceRegister: reg32_0, DestRegister: reg1, IsDestRegSet: true, SetName: addrs},
	}, portDNAT(ports)...)
}

// portDNAT looks "ip daddr . th dport" up in ports and DNATs to the address in reg1 and
// the port found.
func portDNAT(ports string) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: reg32_4, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Payload{DestRegister: reg32_5, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: reg32_4, DestRegister: reg3, IsDestRegSet: true, SetName: ports},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1, RegProtoMin: reg3,
			Specified: true},
	}
}
