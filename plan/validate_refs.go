package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Bounds of spec.interval, the hub's re-plan period without a triggering event. Below
// MinInterval the hub would re-read every member's Services and EndpointSlices over and
// over for nothing (events already trigger it); above MaxInterval drift in a member
// (someone deleting a hub-owned object) would go unrepaired for more than a day. The
// CRD's CEL rule on spec.interval and the error message say the same bounds.
const (
	MinInterval = 10 * time.Second
	MaxInterval = 24 * time.Hour
)

// clusterDNSZones are the zones the member already answers for: the cluster's own
// service domain and strait dns's clusterset zone. An extra zone equal to, inside or
// above one of them would take its names over.
func clusterDNSZones() []struct{ zone, whose string } {
	return []struct{ zone, whose string }{
		{"cluster.local", "the cluster's own service domain (kube-dns/CoreDNS answer it)"},
		{"clusterset.local", "the clusterset zone strait dns always serves"},
	}
}

// validateKubeConfig: the hub reads a member's kubeconfig from a Secret only.
func validateKubeConfig(kc *meta.KubeConfigReference, path *field.Path) field.ErrorList {
	if kc == nil {
		return nil
	}
	var errs field.ErrorList
	if kc.ConfigMapRef != nil {
		errs = append(errs, field.Forbidden(path.Child("configMapRef"),
			"workload-identity kubeconfigs are not supported by the hub; put a kubeconfig in a Secret and name it in secretRef"))
	}
	if kc.SecretRef == nil {
		if kc.ConfigMapRef == nil {
			errs = append(errs, field.Required(path.Child("secretRef"), "a kubeConfig needs a secretRef naming the Secret that holds it; leave kubeConfig out for the hub's own cluster"))
		}
		return errs
	}
	errs = append(errs, validateSecretName(kc.SecretRef.Name, path.Child("secretRef", "name"), "the Secret holding the member's kubeconfig")...)
	if k := kc.SecretRef.Key; k != "" {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Child("secretRef", "key"), k, "not a Secret key: "+msg))
		}
	}
	return errs
}

// validateSecretName checks a reference to a Secret in the ClusterSet's namespace.
func validateSecretName(name string, path *field.Path, what string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "name "+what)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, "not a Secret name: "+msg))
	}
	return errs
}

// validateNodeSelector: the gateway selector becomes a label selector, which the API
// server refuses with invalid keys or values, so gateways would never be found.
func validateNodeSelector(sel map[string]string, path *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(sel, path)
}

func validateDNS(d *straitv1.DNSSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	zones := path.Child("extraZones")
	if len(d.ExtraZones) > maxExtraZones {
		errs = append(errs, field.TooMany(zones, len(d.ExtraZones), maxExtraZones))
	}
	seen := map[string]int{}
	for i, z := range d.ExtraZones {
		p := zones.Index(i)
		name := strings.TrimSuffix(z, ".")
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, z, "not a DNS zone name: "+strings.Join(msgs, "; ")))
			continue
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also extraZones[%d])", z, j)))
			continue
		}
		seen[name] = i
		if !strings.Contains(name, ".") {
			errs = append(errs, field.Invalid(p, z, fmt.Sprintf(
				"a zone of one label would answer for every name under the top-level domain %q; use a zone you own, such as mesh.example.com", name)))
			continue
		}
		for _, own := range clusterDNSZones() {
			if name == own.zone || strings.HasSuffix(name, "."+own.zone) || strings.HasSuffix(own.zone, "."+name) {
				errs = append(errs, field.Invalid(p, z, fmt.Sprintf(
					"would shadow %s, %s; use a zone outside it, such as mesh.example.com", own.zone, own.whose)))
			}
		}
	}
	if d.TTLSeconds < 0 || d.TTLSeconds > maxTTLSeconds {
		errs = append(errs, field.Invalid(path.Child("ttlSeconds"), d.TTLSeconds, "must be between 0 and 3600"))
	}
	switch d.ServiceAnswer {
	case straitv1.ServiceAnswerClusterSetIP, straitv1.ServiceAnswerLocalFirst:
	default:
		errs = append(errs, field.NotSupported(path.Child("serviceAnswer"), d.ServiceAnswer,
			[]string{string(straitv1.ServiceAnswerClusterSetIP), string(straitv1.ServiceAnswerLocalFirst)}))
	}
	return errs
}

func validateInterval(d *metav1.Duration, path *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	if d.Duration < MinInterval || d.Duration > MaxInterval {
		return field.ErrorList{field.Invalid(path, d.Duration.String(),
			"the hub re-plans every interval: it must be from 10s to 24h (events trigger a re-plan at once anyway); the default is 10m")}
	}
	return nil
}
