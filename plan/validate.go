package plan

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// reservedGlobalIPs is how many addresses at the start of every global CIDR are not
// handed out: the network address. Egress IPs follow it.
const reservedGlobalIPs = 1

// Limits the CRD's schema sets too (kustomize/crd/bases): Validate enforces each of them
// so that `strait render` refuses what the API server refuses.
const (
	maxClusters        = 1000
	maxCIDRsPerList    = 8
	maxExports         = 10000
	maxExportClusters  = 1000
	maxExtraZones      = 8
	maxTTLSeconds      = 3600
	minGlobalClusterSz = 4
	maxGlobalClusterSz = 1 << 24
	maxEgressIPs       = 256
)

// Validate checks a ClusterSet for everything that can be decided from the object alone.
// The webhook, the hub and `strait render` run it; every error names the field path, the
// value and what is wrong with it, and for overlaps both clusters and both CIDRs. It
// enforces every rule of the CRD's schema as well, so that a ClusterSet render accepts is
// one the API server accepts.
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
	errs = append(errs, validateInterval(spec.Interval, specPath.Child("interval"))...)
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
	if len(spec.Clusters) > maxClusters {
		errs = append(errs, field.TooMany(path, len(spec.Clusters), maxClusters))
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
		errs = append(errs, validateKubeConfig(c.KubeConfig, p.Child("kubeConfig"))...)
		errs = append(errs, validateNodeSelector(c.Gateway.NodeSelector, p.Child("gateway", "nodeSelector"))...)
		errs = append(errs, validateEndpoint(c.Gateway.Endpoint, spec.Cable.Driver, p.Child("gateway", "endpoint"))...)
		for _, kc := range []struct {
			kind, example string
			cidrs         []string
		}{{"podCIDRs", "10.8.0.0/16", c.PodCIDRs}, {"serviceCIDRs", "10.88.0.0/16", c.ServiceCIDRs}} {
			ps, cerrs := validateCIDRList(kc.cidrs, kc.example, p.Child(kc.kind))
			errs = append(errs, cerrs...)
			for _, np := range ps {
				np.cluster, np.kind = c.Name, kc.kind
				prefixes = append(prefixes, np)
			}
		}
		if c.GlobalCIDR != "" && !GlobalnetEnabled(spec) {
			errs = append(errs, field.Forbidden(p.Child("globalCIDR"), fmt.Sprintf("cluster %s pins globalCIDR %s but spec.globalnet.enabled is false", c.Name, c.GlobalCIDR)))
		}
	}
	errs = append(errs, sameKubeConfigs(spec.Clusters, path)...)
	if !GlobalnetEnabled(spec) {
		errs = append(errs, overlaps(prefixes)...)
	} else {
		// Globalnet translates IPv4; a dual-stack cluster's IPv6 ranges are routed as
		// they are, and must not overlap.
		errs = append(errs, ownOverlaps(inFamily(prefixes, false))...)
		errs = append(errs, overlaps(inFamily(prefixes, true))...)
	}
	errs = append(errs, validateFamilies(spec, path)...)
	return errs
}

// validateCIDRList checks one cluster's podCIDRs or serviceCIDRs: present, at most
// maxCIDRsPerList, each a network the data plane can route, none listed twice.
func validateCIDRList(cidrs []string, example string, path *field.Path) ([]namedPrefix, field.ErrorList) {
	var errs field.ErrorList
	if len(cidrs) == 0 {
		errs = append(errs, field.Required(path, "at least one CIDR is needed, such as "+example))
	}
	if len(cidrs) > maxCIDRsPerList {
		errs = append(errs, field.TooMany(path, len(cidrs), maxCIDRsPerList))
	}
	var out []namedPrefix
	seen := map[netip.Prefix]int{}
	for k, s := range cidrs {
		pfx, err := routableCIDR(path.Index(k), s, example)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if j, dup := seen[pfx]; dup {
			errs = append(errs, field.Duplicate(path.Index(k), fmt.Sprintf("%s (also [%d])", s, j)))
			continue
		}
		seen[pfx] = k
		out = append(out, namedPrefix{prefix: pfx, path: path.Index(k)})
	}
	return out, errs
}

// overlaps reports every pair of CIDRs of different clusters that overlap: without
// globalnet, routing between them would be ambiguous (prefixes of two families never
// overlap). Pod and service CIDRs of one
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
	switch {
	case c.PSKSecretRef != nil:
		errs = append(errs, validateSecretName(c.PSKSecretRef.Name, path.Child("pskSecretRef", "name"), "the Secret with the IPsec pre-shared key")...)
	case c.Driver == straitv1.CableIPsec:
		errs = append(errs, field.Required(path.Child("pskSecretRef"), "the ipsec driver needs a Secret with the pre-shared key (key \"psk\") in the ClusterSet's namespace"))
	}
	return errs
}

func validateExports(spec *straitv1.ClusterSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Exports) > maxExports {
		errs = append(errs, field.TooMany(path, len(spec.Exports), maxExports))
	}
	clusters := make(map[string]bool, len(spec.Clusters))
	for _, c := range spec.Clusters {
		clusters[c.Name] = true
	}
	seen := make(map[string]int, len(spec.Exports))
	for i := range spec.Exports {
		e := &spec.Exports[i]
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(e.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), e.Namespace, "namespace names are RFC 1123 labels: "+msg))
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
		switch e.ClusterSetIP {
		case straitv1.ClusterSetIPAllClusters, straitv1.ClusterSetIPPreferLocal:
		default:
			errs = append(errs, field.NotSupported(p.Child("clusterSetIP"), e.ClusterSetIP,
				[]string{string(straitv1.ClusterSetIPAllClusters), string(straitv1.ClusterSetIPPreferLocal)}))
		}
		if len(e.Clusters) > maxExportClusters {
			errs = append(errs, field.TooMany(p.Child("clusters"), len(e.Clusters), maxExportClusters))
		}
		named := make(map[string]int, len(e.Clusters))
		for k, name := range e.Clusters {
			if j, dup := named[name]; dup {
				errs = append(errs, field.Duplicate(p.Child("clusters").Index(k), fmt.Sprintf("%s (also clusters[%d])", name, j)))
				continue
			}
			named[name] = k
			if !clusters[name] {
				nf := field.NotFound(p.Child("clusters").Index(k), name)
				nf.Detail = "spec.clusters has no cluster of that name; name a member or leave the list empty for every member that has the service"
				errs = append(errs, nf)
			}
		}
	}
	return errs
}
