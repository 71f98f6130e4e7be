package plan

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// reservedGlobalIPs is how many addresses at the start of every global CIDR are not
// handed out: the network address. Egress IPs follow it.
const reservedGlobalIPs = 1

// Validate checks a ClusterSet for everything that can be decided from the object alone.
// The webhook and the hub run it; every error names the field path, the value and what
// is wrong with it, and for overlaps both clusters and both CIDRs.
func Validate(cs *straitv1.ClusterSet) field.ErrorList {
	_, errs := Check(cs)
	return errs
}

// ValidSpec is a ClusterSet that passed Validate, its spec defaulted: what Compute
// starts from. The hub checks once per reconcile, before it contacts any member, and
// computes from the result, so a spec is neither validated nor defaulted twice.
type ValidSpec struct {
	clusterSet types.NamespacedName
	spec       straitv1.ClusterSetSpec // defaulted
}

// Check defaults cs's spec and validates it; it returns no ValidSpec when there are
// errors.
func Check(cs *straitv1.ClusterSet) (*ValidSpec, field.ErrorList) {
	spec := WithDefaults(cs.Spec)
	if errs := validateSpec(&spec); len(errs) > 0 {
		return nil, errs
	}
	return &ValidSpec{clusterSet: types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}, spec: spec}, nil
}

// validateSpec checks a defaulted spec.
func validateSpec(spec *straitv1.ClusterSetSpec) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateClusters(spec, specPath.Child("clusters"))...)
	errs = append(errs, validateCable(&spec.Cable, specPath.Child("cable"))...)
	errs = append(errs, validateGlobalnet(spec, specPath)...)
	errs = append(errs, validateExports(spec, specPath.Child("exports"))...)
	errs = append(errs, validateDNS(&spec.DNS, specPath.Child("dns"))...)
	switch spec.ExportPolicy {
	case straitv1.ExportPolicyDeclared, straitv1.ExportPolicyMemberExports:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("exportPolicy"), spec.ExportPolicy,
			[]string{string(straitv1.ExportPolicyDeclared), string(straitv1.ExportPolicyMemberExports)}))
	}
	return errs
}

// namedPrefix is a parsed CIDR with where it came from, for error messages.
type namedPrefix struct {
	cluster string
	kind    string // "podCIDRs" or "serviceCIDRs"
	prefix  netip.Prefix
	path    *field.Path
}

func validateClusters(spec *straitv1.ClusterSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Clusters) == 0 {
		errs = append(errs, field.Required(path, "a clusterset needs at least one cluster"))
	}
	if len(spec.Clusters) > 255 {
		errs = append(errs, field.TooMany(path, len(spec.Clusters), 255))
	}
	seen := map[string]int{}
	var prefixes []namedPrefix
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, "cluster names must be RFC 1123 labels: "+msg))
		}
		if j, dup := seen[c.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also clusters[%d])", c.Name, j)))
		} else {
			seen[c.Name] = i
		}
		if c.KubeConfig != nil && c.KubeConfig.SecretRef == nil && c.KubeConfig.ConfigMapRef == nil {
			errs = append(errs, field.Required(p.Child("kubeConfig", "secretRef"), "a kubeConfig needs a secretRef naming the Secret that holds it"))
		}
		for _, kc := range []struct {
			kind  string
			cidrs []string
		}{{"podCIDRs", c.PodCIDRs}, {"serviceCIDRs", c.ServiceCIDRs}} {
			kind, cidrs := kc.kind, kc.cidrs
			if len(cidrs) == 0 {
				errs = append(errs, field.Required(p.Child(kind), "at least one CIDR is needed"))
			}
			for k, s := range cidrs {
				pfx, err := parseCIDR(s)
				if err != nil {
					errs = append(errs, field.Invalid(p.Child(kind).Index(k), s, err.Error()))
					continue
				}
				prefixes = append(prefixes, namedPrefix{cluster: c.Name, kind: kind, prefix: pfx, path: p.Child(kind).Index(k)})
			}
		}
		if c.GlobalCIDR != "" && !GlobalnetEnabled(spec) {
			errs = append(errs, field.Forbidden(p.Child("globalCIDR"), fmt.Sprintf("cluster %s pins globalCIDR %s but spec.globalnet.enabled is false", c.Name, c.GlobalCIDR)))
		}
	}
	if !GlobalnetEnabled(spec) {
		errs = append(errs, overlaps(prefixes)...)
	} else {
		errs = append(errs, ownOverlaps(prefixes)...)
	}
	return errs
}

// overlaps reports every pair of CIDRs of different clusters that overlap: without
// globalnet, routing between them would be ambiguous. Pod and service CIDRs of one
// cluster must not overlap either.
func overlaps(prefixes []namedPrefix) field.ErrorList {
	var errs field.ErrorList
	for i := range prefixes {
		for j := i + 1; j < len(prefixes); j++ {
			a, b := prefixes[i], prefixes[j]
			if !a.prefix.Overlaps(b.prefix) {
				continue
			}
			if a.cluster == b.cluster {
				if a.kind != b.kind {
					errs = append(errs, field.Invalid(b.path, b.prefix.String(), fmt.Sprintf(
						"cluster %s: %s %s overlaps its own %s %s", b.cluster, b.kind, b.prefix, a.kind, a.prefix)))
				}
				continue
			}
			errs = append(errs, field.Invalid(b.path, b.prefix.String(), fmt.Sprintf(
				"clusters %s and %s overlap: %s %s of %s overlaps %s %s of %s; give them disjoint CIDRs or enable spec.globalnet",
				a.cluster, b.cluster, b.kind, b.prefix, b.cluster, a.kind, a.prefix, a.cluster)))
		}
	}
	return errs
}

// ownOverlaps reports pod/service overlaps inside one cluster, which globalnet cannot fix.
func ownOverlaps(prefixes []namedPrefix) field.ErrorList {
	var errs field.ErrorList
	for i := range prefixes {
		for j := i + 1; j < len(prefixes); j++ {
			a, b := prefixes[i], prefixes[j]
			if a.cluster == b.cluster && a.kind != b.kind && a.prefix.Overlaps(b.prefix) {
				errs = append(errs, field.Invalid(b.path, b.prefix.String(), fmt.Sprintf(
					"cluster %s: %s %s overlaps its own %s %s", b.cluster, b.kind, b.prefix, a.kind, a.prefix)))
			}
		}
	}
	return errs
}

func validateCable(c *straitv1.CableSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch c.Driver {
	case straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN:
	default:
		errs = append(errs, field.NotSupported(path.Child("driver"), c.Driver,
			[]string{string(straitv1.CableWireGuard), string(straitv1.CableIPsec), string(straitv1.CableVXLAN)}))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, field.Invalid(path.Child("port"), c.Port, "must be a UDP port between 1 and 65535"))
	}
	if c.Driver == straitv1.CableIPsec && (c.PSKSecretRef == nil || c.PSKSecretRef.Name == "") {
		errs = append(errs, field.Required(path.Child("pskSecretRef"), "the ipsec driver needs a Secret with the pre-shared key"))
	}
	return errs
}

func validateGlobalnet(spec *straitv1.ClusterSetSpec, specPath *field.Path) field.ErrorList {
	if !GlobalnetEnabled(spec) {
		return nil
	}
	g := spec.Globalnet
	path := specPath.Child("globalnet")
	var errs field.ErrorList
	rng, err := parseCIDR(g.CIDRRange)
	if err != nil {
		return append(errs, field.Invalid(path.Child("cidrRange"), g.CIDRRange, err.Error()))
	}
	if !rng.Addr().Is4() {
		return append(errs, field.Invalid(path.Child("cidrRange"), g.CIDRRange, "globalnet needs an IPv4 range"))
	}
	rangeSize := uint64(1) << (32 - rng.Bits())
	size := uint64(g.ClusterSize)
	if size < 4 || size > 1<<24 || size&(size-1) != 0 {
		errs = append(errs, field.Invalid(path.Child("clusterSize"), g.ClusterSize, "must be a power of two from 4 to 16777216"))
		return errs
	}
	if g.ClusterEgressIPs < 1 || g.ClusterEgressIPs > 256 {
		return append(errs, field.Invalid(path.Child("clusterEgressIPs"), g.ClusterEgressIPs, "must be between 1 and 256"))
	}
	if uint64(g.ClusterEgressIPs)+reservedGlobalIPs >= size {
		errs = append(errs, field.Invalid(path.Child("clusterEgressIPs"), g.ClusterEgressIPs, fmt.Sprintf(
			"%d egress IPs do not fit a cluster's global CIDR of %d addresses (%d is reserved, and services need some)",
			g.ClusterEgressIPs, size, reservedGlobalIPs)))
	}

	var pins []namedPrefix
	needed := uint64(0)
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		p := specPath.Child("clusters").Index(i).Child("globalCIDR")
		if c.GlobalCIDR == "" {
			needed += size
			continue
		}
		pin, err := parseCIDR(c.GlobalCIDR)
		if err != nil {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, err.Error()))
			continue
		}
		if pin.Masked() != pin {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf("host bits are set; did you mean %s?", pin.Masked())))
			continue
		}
		if !rng.Contains(pin.Addr()) || pin.Bits() < rng.Bits() {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf("cluster %s's pinned global CIDR is outside spec.globalnet.cidrRange %s", c.Name, rng)))
			continue
		}
		pinSize := uint64(1) << (32 - pin.Bits())
		if uint64(g.ClusterEgressIPs)+reservedGlobalIPs >= pinSize {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf(
				"cluster %s's global CIDR has %d addresses, too few for %d egress IPs (spec.globalnet.clusterEgressIPs) plus services",
				c.Name, pinSize, g.ClusterEgressIPs)))
		}
		for _, other := range pins {
			if other.prefix.Overlaps(pin) {
				errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf(
					"pinned global CIDRs of clusters %s and %s overlap: %s and %s", other.cluster, c.Name, other.prefix, pin)))
			}
		}
		pins = append(pins, namedPrefix{cluster: c.Name, prefix: pin, path: p})
		needed += pinSize
	}
	if needed > rangeSize {
		errs = append(errs, field.Invalid(path.Child("cidrRange"), g.CIDRRange, fmt.Sprintf(
			"too small: %d clusters need %d global addresses (clusterSize %d each, plus pinned CIDRs) but the range has %d",
			len(spec.Clusters), needed, size, rangeSize)))
	}
	return errs
}

func validateExports(spec *straitv1.ClusterSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	clusters := make(map[string]bool, len(spec.Clusters))
	for _, c := range spec.Clusters {
		clusters[c.Name] = true
	}
	seen := make(map[string]int, len(spec.Exports))
	for i := range spec.Exports {
		e := &spec.Exports[i]
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(e.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), e.Namespace, msg))
		}
		for _, msg := range validation.IsDNS1035Label(e.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, "service names are RFC 1035 labels: "+msg))
		}
		key := e.Namespace + "/" + e.Name
		if j, dup := seen[key]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also exports[%d])", key, j)))
		} else {
			seen[key] = i
		}
		for k, name := range e.Clusters {
			if !clusters[name] {
				errs = append(errs, field.NotFound(p.Child("clusters").Index(k), name))
			}
		}
	}
	return errs
}

func validateDNS(d *straitv1.DNSSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, z := range d.ExtraZones {
		for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(z, ".")) {
			errs = append(errs, field.Invalid(path.Child("extraZones").Index(i), z, msg))
		}
	}
	if d.TTLSeconds < 0 || d.TTLSeconds > 3600 {
		errs = append(errs, field.Invalid(path.Child("ttlSeconds"), d.TTLSeconds, "must be between 0 and 3600"))
	}
	return errs
}

// parseCIDR parses a CIDR and says plainly what is wrong with a bad one.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not a CIDR (want an address and a prefix length, such as 10.8.0.0/16)")
	}
	return p, nil
}
