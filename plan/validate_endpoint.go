package plan

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Bounds of a DNSName endpoint's refresh interval: often enough to follow a changed
// record within a failover's time, rarely enough not to load a resolver.
const (
	minEndpointRefresh = 5 * time.Second
	maxEndpointRefresh = time.Hour
	maxNodeAddresses   = 64
)

// endpointTypes are the values of spec.clusters[].gateway.endpoint.type.
var endpointTypes = []string{
	string(straitv1.EndpointInternalIP), string(straitv1.EndpointAddress), string(straitv1.EndpointExternalIP),
	string(straitv1.EndpointLoadBalancer), string(straitv1.EndpointDNSName), string(straitv1.EndpointMasquerade),
}

// validateEndpoint checks how a cluster's gateways are reached, and that the cable
// driver can reach them so.
func validateEndpoint(ep *straitv1.GatewayEndpoint, driver straitv1.CableDriver, path *field.Path) field.ErrorList {
	if ep == nil {
		return nil
	}
	var errs field.ErrorList
	set := map[string]bool{
		"address":         ep.Address != "",
		"nodeAddresses":   len(ep.NodeAddresses) > 0,
		"service":         ep.Service != nil,
		"dnsName":         ep.DNSName != "",
		"refreshInterval": ep.RefreshInterval != nil,
	}
	// The fields each type uses; a field set for another type is refused, so the file
	// cannot say one thing and do another.
	uses := map[straitv1.GatewayEndpointType][]string{
		straitv1.EndpointAddress:      {"address", "nodeAddresses"},
		straitv1.EndpointLoadBalancer: {"service"},
		straitv1.EndpointDNSName:      {"dnsName", "refreshInterval"},
	}
	switch ep.Type {
	case straitv1.EndpointInternalIP, straitv1.EndpointExternalIP, straitv1.EndpointMasquerade:
	case straitv1.EndpointAddress:
		switch {
		case ep.Address == "" && len(ep.NodeAddresses) == 0:
			errs = append(errs, field.Required(path.Child("address"), "type Address needs address (one for the whole cluster) or nodeAddresses (one per gateway node)"))
		case ep.Address != "" && len(ep.NodeAddresses) > 0:
			errs = append(errs, field.Forbidden(path.Child("nodeAddresses"), "give address (one for the whole cluster) or nodeAddresses (one per gateway node), not both"))
		}
		if ep.Address != "" {
			errs = append(errs, validatePublicAddress(ep.Address, path.Child("address"))...)
		}
		errs = append(errs, validateNodeAddresses(ep.NodeAddresses, path.Child("nodeAddresses"))...)
	case straitv1.EndpointLoadBalancer:
		if ep.Service == nil {
			errs = append(errs, field.Required(path.Child("service"), "type LoadBalancer needs the Service (namespace and name) whose load balancer address the other clusters send to"))
		} else {
			for _, f := range []struct{ name, value string }{{"namespace", ep.Service.Namespace}, {"name", ep.Service.Name}} {
				for _, msg := range validation.IsDNS1123Label(f.value) {
					errs = append(errs, field.Invalid(path.Child("service", f.name), f.value, "not a Service "+f.name+": "+msg))
				}
			}
		}
	case straitv1.EndpointDNSName:
		if ep.DNSName == "" {
			errs = append(errs, field.Required(path.Child("dnsName"), "type DNSName needs the name the other clusters' gateways resolve"))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(ep.DNSName) {
				errs = append(errs, field.Invalid(path.Child("dnsName"), ep.DNSName, "not a DNS name: "+msg))
			}
		}
		if d := ep.RefreshInterval; d != nil && (d.Duration < minEndpointRefresh || d.Duration > maxEndpointRefresh) {
			errs = append(errs, field.Invalid(path.Child("refreshInterval"), d.Duration.String(),
				"the dialing gateways resolve dnsName again every refreshInterval: it must be from 5s to 1h; the default is 60s"))
		}
	default:
		return append(errs, field.NotSupported(path.Child("type"), ep.Type, endpointTypes))
	}
	for _, f := range []string{"address", "nodeAddresses", "service", "dnsName", "refreshInterval"} {
		if set[f] && !slices.Contains(uses[ep.Type], f) {
			errs = append(errs, field.Forbidden(path.Child(f), fmt.Sprintf("%s is for another endpoint type than %s", f, ep.Type)))
		}
	}
	if driver == straitv1.CableVXLAN {
		switch ep.Type {
		case straitv1.EndpointMasquerade:
			errs = append(errs, field.Invalid(path.Child("type"), ep.Type,
				"the vxlan cable has no NAT traversal: nothing can send to gateways behind masquerade only; use the wireguard or ipsec driver, or give the gateways public addresses (type Address or ExternalIP)"))
		case straitv1.EndpointLoadBalancer, straitv1.EndpointDNSName:
			errs = append(errs, field.Invalid(path.Child("type"), ep.Type,
				"the vxlan cable derives each gateway's VTEP from its advertised address, which the gateway itself must know: use type Address, ExternalIP or InternalIP, or the wireguard or ipsec driver"))
		}
		v6 := func(addr string, at *field.Path) {
			if a, err := netip.ParseAddr(addr); err == nil && a.Is6() && !a.Is4In6() {
				errs = append(errs, field.Invalid(at, addr,
					"the vxlan cable runs over IPv4 only (it carries IPv6 inside): give the gateway an IPv4 address, or use the wireguard or ipsec driver, which also run over IPv6"))
			}
		}
		v6(ep.Address, path.Child("address"))
		for k, na := range ep.NodeAddresses {
			v6(na.Address, path.Child("nodeAddresses").Index(k).Child("address"))
		}
	}
	return errs
}

// validatePublicAddress: an address of either family another cluster can send to.
func validatePublicAddress(s string, path *field.Path) field.ErrorList {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path, s, "not an IP address: want an address such as 203.0.113.7 or 2001:db8::7")}
	case a.Is4In6() || a.Zone() != "":
		return field.ErrorList{field.Invalid(path, s, "write an IPv4 address in its dotted form and an IPv6 address without a zone")}
	case a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() || a.IsLinkLocalUnicast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return field.ErrorList{field.Invalid(path, s, "not an address another cluster can send to (unspecified, loopback, link-local, multicast or broadcast)")}
	}
	return nil
}

func validateNodeAddresses(nas []straitv1.NodeAddress, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(nas) > maxNodeAddresses {
		errs = append(errs, field.TooMany(path, len(nas), maxNodeAddresses))
	}
	nodes, addrs := map[string]int{}, map[string]int{}
	for i, na := range nas {
		p := path.Index(i)
		if na.Node == "" {
			errs = append(errs, field.Required(p.Child("node"), "the gateway node's name"))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(na.Node) {
				errs = append(errs, field.Invalid(p.Child("node"), na.Node, "not a node name: "+msg))
			}
		}
		if j, dup := nodes[na.Node]; dup {
			errs = append(errs, field.Duplicate(p.Child("node"), fmt.Sprintf("%s (also nodeAddresses[%d])", na.Node, j)))
		}
		nodes[na.Node] = i
		errs = append(errs, validatePublicAddress(na.Address, p.Child("address"))...)
		if j, dup := addrs[na.Address]; dup {
			errs = append(errs, field.Invalid(p.Child("address"), na.Address,
				fmt.Sprintf("also the address of nodeAddresses[%d] (%s): with 1:1 NAT each gateway has its own; one shared address is spec address", j, nas[j].Node)))
		}
		addrs[na.Address] = i
	}
	return errs
}
