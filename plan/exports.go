package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// exportPlan is one exported service across the clusterset: who exports it, who
// contributes to its import, and what conflicts were resolved how.
type exportPlan struct {
	namespace, name string
	// nsName is "namespace/name", made once: it keys maps per member and per reconcile.
	nsName string
	// exportedFrom: clusters with a ServiceExport that counts (declared in git, or made
	// in the member under the MemberExports policy).
	exportedFrom map[string]bool
	// declared: clusters where the hub writes the ServiceExport.
	declared map[string]bool
	// sources contribute to the import, oldest export first.
	sources []*exportSource
	// noService: exported from there, but the service was not observed.
	noService map[string]bool
	// invalidType: exported from there, but the service is of a type the MCS API does
	// not export (ExternalName); the cluster is left out of the import.
	invalidType map[string]string
	// conflicts: cluster -> the conflicts of its Conflict condition, in the order found.
	conflicts map[string][]conflictNote
	typ       mcsv1.ServiceImportType
	ports     []mcsv1.ServicePort
	// props are the import's properties besides type and ports, the oldest export's.
	props importProps
	// preferLocal: an exporting member's clusterset IP leads to its own endpoints while
	// it has a ready one (ExportSpec.ClusterSetIP PreferLocal).
	preferLocal bool
	// kept is what a Planner keeps with the resolution to take it over and its digests
	// (nil without a planner).
	kept *keptExport
}

// conflictNote is one reason of a Conflict condition and what it says.
type conflictNote struct{ reason, message string }

// importProps are what a ServiceImport takes from the oldest export besides its type and
// ports: the service's session affinity, IP families and traffic policies, and the
// labels and annotations its ServiceExport declares exported.
type importProps struct {
	sessionAffinity       corev1.ServiceAffinity
	sessionAffinityConfig *corev1.SessionAffinityConfig
	ipFamilies            []corev1.IPFamily
	internalTraffic       *corev1.ServiceInternalTrafficPolicy
	trafficDistribution   *string
	labels, annotations   map[string]string
}

// exportSource is one cluster's contribution to an import.
type exportSource struct {
	cluster    string
	exportedAt *metav1.Time
	headless   bool
	// clusterIP is the service's first; clusterIPs all of them, one per family (nil
	// when the object lists none: an object written without the API server's defaults).
	clusterIP       string
	clusterIPs      []string
	ports           []corev1.ServicePort
	targetPorts     []discoveryv1.EndpointPort
	publishNotReady bool
	endpoints       []sourceEndpoint
	anyReady        bool
	props           importProps
}

type sourceEndpoint struct {
	ip, pod, hostname, owner string
	ready                    bool
}

func (e *exportPlan) key() string { return e.nsName }

// objectKey is the exported service's namespace and name, as the member's objects are
// keyed.
func (e *exportPlan) objectKey() types.NamespacedName {
	return types.NamespacedName{Namespace: e.namespace, Name: e.name}
}

func (e *exportPlan) source(cluster string) *exportSource {
	for _, s := range e.sources {
		if s.cluster == cluster {
			return s
		}
	}
	return nil
}

// planExports gathers every export and has resolve apply the MCS rules to each (see
// Plan.resolve), taking what resolve returns: the export resolved, or an equal
// resolution kept from an earlier plan (Planner).
func (p *Plan) planExports(resolve func(*exportPlan) *exportPlan) []*exportPlan {
	byKey := map[string]*exportPlan{}
	get := func(ns, name string) *exportPlan {
		k := ns + "/" + name
		if e := byKey[k]; e != nil {
			return e
		}
		// The maps of what resolve finds are made by resolve: a Planner takes most
		// exports over without resolving them.
		e := &exportPlan{namespace: ns, name: name, nsName: k, exportedFrom: map[string]bool{}, declared: map[string]bool{}}
		byKey[k] = e
		return e
	}
	for _, d := range p.spec.Exports {
		e := get(d.Namespace, d.Name)
		clusters := d.Clusters
		if len(clusters) == 0 {
			clusters = p.clusters
		}
		for _, c := range clusters {
			e.exportedFrom[c], e.declared[c] = true, true
		}
		e.preferLocal = d.ClusterSetIP == straitv1.ClusterSetIPPreferLocal
	}
	if p.spec.ExportPolicy == straitv1.ExportPolicyMemberExports {
		for _, c := range p.clusters {
			f := p.observed[c]
			if f == nil {
				continue
			}
			for i := range f.ServiceExports {
				se := &f.ServiceExports[i]
				if se.Labels[straitv1.LabelManagedBy] == straitv1.ManagedByHub {
					continue
				}
				get(se.Namespace, se.Name).exportedFrom[c] = true
			}
		}
	}
	out := make([]*exportPlan, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, resolve(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// resolve applies the MCS rules to an export gathered by planExports: the type and the
// ports of the import follow the oldest export; a cluster whose service has another type
// is left out with a TypeConflict; conflicting port definitions keep the oldest one.
func (p *Plan) resolve(e *exportPlan) {
	e.noService, e.invalidType, e.conflicts = map[string]bool{}, map[string]string{}, map[string][]conflictNote{}
	for _, c := range sortedKeys(e.exportedFrom) {
		x := p.facts[c]
		svc := x.service(e.objectKey())
		if svc == nil {
			e.noService[c] = true
			continue
		}
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			e.invalidType[c] = fmt.Sprintf("service %s/%s is of type ExternalName, which the Multi-Cluster Services API does not export",
				e.namespace, e.name)
			continue
		}
		s := &exportSource{
			cluster:         c,
			headless:        svc.Spec.ClusterIP == corev1.ClusterIPNone,
			clusterIP:       svc.Spec.ClusterIP,
			clusterIPs:      svc.Spec.ClusterIPs,
			ports:           svc.Spec.Ports,
			targetPorts:     x.slicePorts(e.objectKey()),
			publishNotReady: svc.Spec.PublishNotReadyAddresses,
			props:           propsOf(svc),
		}
		if se := x.serviceExport(e.objectKey()); se != nil {
			if !se.CreationTimestamp.IsZero() {
				t := se.CreationTimestamp
				s.exportedAt = &t
			}
			s.props.labels, s.props.annotations = se.Spec.ExportedLabels, se.Spec.ExportedAnnotations
		}
		for _, ep := range x.endpoints(e.objectKey()) {
			se := sourceEndpoint{ip: ep.Addresses[0], ready: isReady(ep)}
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
				se.pod = ep.TargetRef.Name
			}
			// An endpoint without hostname has none in the import either: DNS names it by
			// its dashed address, as Kubernetes' DNS and the MCS DNS spec do (not by its
			// pod's name, which the pod's own cluster does not answer).
			if ep.Hostname != nil {
				se.hostname = *ep.Hostname
			}
			se.owner = endpointOwner(se.pod, se.ip)
			s.anyReady = s.anyReady || se.ready
			s.endpoints = append(s.endpoints, se)
		}
		sort.Slice(s.endpoints, func(i, j int) bool { return s.endpoints[i].owner < s.endpoints[j].owner })
		e.sources = append(e.sources, s)
	}
	sort.SliceStable(e.sources, func(i, j int) bool { return olderExport(e.sources[i], e.sources[j]) })
	if len(e.sources) == 0 {
		return
	}
	oldest := e.sources[0]
	e.typ = serviceType(oldest.headless)
	kept := e.sources[:0]
	var leftOut []string
	for _, s := range e.sources {
		if s.headless != oldest.headless {
			e.conflict(s.cluster, mcsv1.ServiceExportReasonTypeConflict, fmt.Sprintf(
				"service type %s differs from the oldest export's (%s in cluster %s); this cluster is left out of the import",
				serviceType(s.headless), e.typ, oldest.cluster))
			leftOut = append(leftOut, s.cluster)
			continue
		}
		kept = append(kept, s)
	}
	e.sources = kept
	if len(leftOut) > 0 {
		e.conflict(oldest.cluster, mcsv1.ServiceExportReasonTypeConflict, fmt.Sprintf(
			"cluster(s) %s export it with another type; this export is the oldest, so the import is %s and they are left out",
			strings.Join(leftOut, ", "), e.typ))
	}
	e.ports = e.unionPorts()
	e.props = oldest.props
	e.resolveProps()
}

// propsOf are the import properties a service gives, its export's labels and
// annotations aside. IP families are the service's, or its cluster IP's family when the
// service names none (an object written without the API server's defaults).
func propsOf(svc *corev1.Service) importProps {
	pr := importProps{
		sessionAffinity:       svc.Spec.SessionAffinity,
		sessionAffinityConfig: svc.Spec.SessionAffinityConfig,
		ipFamilies:            svc.Spec.IPFamilies,
		internalTraffic:       svc.Spec.InternalTrafficPolicy,
		trafficDistribution:   svc.Spec.TrafficDistribution,
	}
	if pr.sessionAffinity == "" {
		pr.sessionAffinity = corev1.ServiceAffinityNone
	}
	if len(pr.ipFamilies) == 0 {
		pr.ipFamilies = []corev1.IPFamily{familyOf(svc.Spec.ClusterIP)}
	}
	return pr
}

// resolveProps marks the conflicts of the properties besides type and ports: the
// import has the oldest export's (e.props), and every export that differs, and the
// oldest one, get a Conflict naming the property.
func (e *exportPlan) resolveProps() {
	oldest := e.sources[0]
	checks := []struct {
		reason mcsv1.ServiceExportConditionReason
		what   string
		same   func(a, b *importProps) bool
	}{
		{mcsv1.ServiceExportReasonSessionAffinityConflict, "session affinity",
			func(a, b *importProps) bool { return a.sessionAffinity == b.sessionAffinity }},
		{mcsv1.ServiceExportReasonSessionAffinityConfigConflict, "session affinity config",
			func(a, b *importProps) bool { return equality(a.sessionAffinityConfig, b.sessionAffinityConfig) }},
		{mcsv1.ServiceExportReasonIPFamilyConflict, "IP families",
			func(a, b *importProps) bool { return equality(a.ipFamilies, b.ipFamilies) }},
		{mcsv1.ServiceExportReasonInternalTrafficPolicyConflict, "internal traffic policy",
			func(a, b *importProps) bool { return equality(a.internalTraffic, b.internalTraffic) }},
		{mcsv1.ServiceExportReasonTrafficDistributionConflict, "traffic distribution",
			func(a, b *importProps) bool { return equality(a.trafficDistribution, b.trafficDistribution) }},
		{mcsv1.ServiceExportReasonLabelsConflict, "exported labels",
			func(a, b *importProps) bool { return equality(a.labels, b.labels) }},
		{mcsv1.ServiceExportReasonAnnotationsConflict, "exported annotations",
			func(a, b *importProps) bool { return equality(a.annotations, b.annotations) }},
	}
	for _, c := range checks {
		var differ []string
		for _, s := range e.sources[1:] {
			if !c.same(&oldest.props, &s.props) {
				differ = append(differ, s.cluster)
				e.conflict(s.cluster, c.reason, fmt.Sprintf("%s differ from the oldest export's (cluster %s), which the import has",
					c.what, oldest.cluster))
			}
		}
		if len(differ) > 0 {
			e.conflict(oldest.cluster, c.reason, fmt.Sprintf("%s differ in cluster(s) %s; this export is the oldest, so the import has its own",
				c.what, strings.Join(differ, ", ")))
		}
	}
}

// conflict adds one conflict to cluster's Conflict condition.
func (e *exportPlan) conflict(cluster string, reason mcsv1.ServiceExportConditionReason, message string) {
	e.conflicts[cluster] = append(e.conflicts[cluster], conflictNote{reason: string(reason), message: message})
}

// equality compares two property values as the API server would store them: nil and
// empty are the same.
func equality[T any](a, b T) bool {
	return apiequality.Semantic.DeepEqual(a, b) || isEmpty(a) && isEmpty(b)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]string:
		return len(x) == 0
	case []corev1.IPFamily:
		return len(x) == 0
	}
	return false
}

// olderExport orders exports by creation time, known times before unknown ones (an
// export not yet written is the newest), then by cluster name.
func olderExport(a, b *exportSource) bool {
	switch {
	case a.exportedAt != nil && b.exportedAt == nil:
		return true
	case a.exportedAt == nil && b.exportedAt != nil:
		return false
	case a.exportedAt != nil && !a.exportedAt.Equal(b.exportedAt):
		return a.exportedAt.Before(b.exportedAt)
	}
	return a.cluster < b.cluster
}

func serviceType(headless bool) mcsv1.ServiceImportType {
	if headless {
		return mcsv1.Headless
	}
	return mcsv1.ClusterSetIP
}

// unionPorts is the union of the sources' ports by name; a port name defined
// differently by a newer export keeps the oldest definition and marks a PortConflict.
func (e *exportPlan) unionPorts() []mcsv1.ServicePort {
	byName := map[string]mcsv1.ServicePort{}
	owner := map[string]string{}
	for _, s := range e.sources {
		for _, sp := range s.ports {
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			port := mcsv1.ServicePort{Name: sp.Name, Protocol: proto, AppProtocol: sp.AppProtocol, Port: sp.Port}
			prev, ok := byName[sp.Name]
			if !ok {
				byName[sp.Name], owner[sp.Name] = port, s.cluster
				continue
			}
			if prev.Port != port.Port || prev.Protocol != port.Protocol {
				e.conflict(s.cluster, mcsv1.ServiceExportReasonPortConflict, fmt.Sprintf(
					"port %q is %d/%s here but %d/%s in cluster %s, whose export is older; the older definition is used",
					sp.Name, port.Port, port.Protocol, prev.Port, prev.Protocol, owner[sp.Name]))
				e.conflict(owner[sp.Name], mcsv1.ServiceExportReasonPortConflict, fmt.Sprintf(
					"port %q is %d/%s in cluster %s; this export is older, so its definition (%d/%s) is used",
					sp.Name, port.Port, port.Protocol, s.cluster, prev.Port, prev.Protocol))
			}
		}
	}
	e.missingPorts(byName)
	out := make([]mcsv1.ServicePort, 0, len(byName))
	for _, sp := range byName {
		out = append(out, sp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		if out[i].Protocol != out[j].Protocol {
			return out[i].Protocol < out[j].Protocol
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// missingPorts marks a PortConflict on every export when the exports do not all have
// the same ports: the import has their union (unionPorts), so some clusters do not
// serve ports the import offers, which the MCS API (KEP 1645, "Service Port") has
// reported as a conflict on each export involved.
func (e *exportPlan) missingPorts(union map[string]mcsv1.ServicePort) {
	missing := map[string][]string{}
	var lacking []string
	for _, s := range e.sources {
		has := map[string]bool{}
		for _, sp := range s.ports {
			has[sp.Name] = true
		}
		for _, name := range sortedKeys(union) {
			if !has[name] {
				missing[s.cluster] = append(missing[s.cluster], portLabel(union[name]))
			}
		}
		if len(missing[s.cluster]) > 0 {
			lacking = append(lacking, s.cluster)
		}
	}
	if len(lacking) == 0 {
		return
	}
	for _, s := range e.sources {
		var others []string
		for _, c := range lacking {
			if c != s.cluster {
				others = append(others, fmt.Sprintf("%s lacks %s", c, strings.Join(missing[c], ", ")))
			}
		}
		msg := "the exports' ports differ, so the import has their union"
		if m := missing[s.cluster]; len(m) > 0 {
			msg += "; this export lacks " + strings.Join(m, ", ")
		}
		if len(others) > 0 {
			msg += "; " + strings.Join(others, "; ")
		}
		e.conflict(s.cluster, mcsv1.ServiceExportReasonPortConflict, msg)
	}
}

// portLabel names a port in a condition message: its name and definition.
func portLabel(sp mcsv1.ServicePort) string {
	if sp.Name == "" {
		return fmt.Sprintf("the unnamed port %d/%s", sp.Port, sp.Protocol)
	}
	return fmt.Sprintf("%q (%d/%s)", sp.Name, sp.Port, sp.Protocol)
}

// conditions are the ServiceExport conditions of the export in cluster. Conflicts of
// several kinds make one condition whose reason lists them, comma-separated, as the MCS
// API asks; a cluster left out for its type is not Ready.
func (e *exportPlan) conditions(cluster string) []metav1.Condition {
	valid := metav1.Condition{Type: string(mcsv1.ServiceExportConditionValid), Status: metav1.ConditionTrue,
		Reason: string(mcsv1.ServiceExportReasonValid), Message: "the service can be exported"}
	ready := metav1.Condition{Type: string(mcsv1.ServiceExportConditionReady), Status: metav1.ConditionTrue,
		Reason: string(mcsv1.ServiceExportReasonExported), Message: "the service is imported into every member"}
	conflict := metav1.Condition{Type: string(mcsv1.ServiceExportConditionConflict), Status: metav1.ConditionFalse,
		Reason: string(mcsv1.ServiceExportReasonNoConflicts), Message: "no conflicts with the other exports"}
	switch {
	case e.noService[cluster]:
		valid.Status, valid.Reason, valid.Message = metav1.ConditionFalse, string(mcsv1.ServiceExportReasonNoService),
			fmt.Sprintf("service %s/%s does not exist in this cluster", e.namespace, e.name)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(mcsv1.ServiceExportReasonPending),
			"waiting for the service"
	case e.invalidType[cluster] != "":
		valid.Status, valid.Reason, valid.Message = metav1.ConditionFalse, string(mcsv1.ServiceExportReasonInvalidServiceType),
			e.invalidType[cluster]
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(mcsv1.ServiceExportReasonFailed),
			"the service cannot be exported"
	}
	if notes := e.conflicts[cluster]; len(notes) > 0 {
		var reasons, messages []string
		for _, n := range notes {
			if !slices.Contains(reasons, n.reason) {
				reasons = append(reasons, n.reason)
			}
			messages = append(messages, n.message)
		}
		conflict.Status, conflict.Reason, conflict.Message = metav1.ConditionTrue, strings.Join(reasons, ","), strings.Join(messages, "; ")
		if e.source(cluster) == nil && e.typ != "" {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(mcsv1.ServiceExportReasonFailed), notes[0].message
		}
	}
	return []metav1.Condition{valid, ready, conflict}
}

// conflictSummary is one line naming every conflicting cluster, for ClusterSet status.
func (e *exportPlan) conflictSummary() string {
	var parts []string
	for _, c := range sortedKeys(e.conflicts) {
		for _, n := range e.conflicts[c] {
			parts = append(parts, c+": "+n.message)
		}
	}
	return strings.Join(parts, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
