package controllers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// memberKind is a kind the hub reads or writes in a member: its resource there (plural,
// as the API server names it: guessed from the kind, Gateway would be "gatewaies") and
// its scope.
type memberKind struct {
	gvk      schema.GroupVersionKind
	resource string
	scope    meta.RESTScope
}

// memberKinds are every kind the hub reads or writes in a member: what plan.Objects
// builds (Membership, Peers, GlobalIngresses, ServiceImports, EndpointSlices, derived
// Services, the IPsec key's Secret), what it watches (watchedKinds) and the namespaces
// it creates and reads kube-system's UID from.
func memberKinds() []memberKind {
	namespaced := func(gv schema.GroupVersion, kind, resource string) memberKind {
		return memberKind{gv.WithKind(kind), resource, meta.RESTScopeNamespace}
	}
	core, strait := corev1.SchemeGroupVersion, straitv1.GroupVersion
	return []memberKind{
		{core.WithKind("Namespace"), "namespaces", meta.RESTScopeRoot},
		namespaced(core, "Secret", "secrets"),
		namespaced(core, "Service", "services"),
		namespaced(discoveryv1.SchemeGroupVersion, "EndpointSlice", "endpointslices"),
		namespaced(mcsv1.SchemeGroupVersion, "ServiceExport", "serviceexports"),
		namespaced(mcsv1.SchemeGroupVersion, "ServiceImport", "serviceimports"),
		namespaced(strait, "Membership", "memberships"),
		namespaced(strait, "Peer", "peers"),
		namespaced(strait, "Gateway", "gateways"),
		namespaced(strait, "GlobalIngress", "globalingresses"),
	}
}

// memberMapper maps the member kinds to their resources without asking a member. A
// connection's client and informers would otherwise each build a REST mapper from the
// member's discovery, some 320 KB a member that the hub holds 1,000 times over; these
// kinds, their resources and scopes are fixed by the API versions the hub speaks, the
// same in every member that serves them. One built once serves every connection (it is
// only read). A member that does not serve a watched kind is found by its connection's
// probe (members.Options.Mapper); one that lacks a kind the hub only writes (a Peer, a
// ServiceImport) answers those writes 404 where its discovery said "no matches".
func memberMapper() meta.RESTMapper {
	kinds := memberKinds()
	var versions []schema.GroupVersion
	for _, k := range kinds {
		versions = append(versions, k.gvk.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(versions)
	for _, k := range kinds {
		gv := k.gvk.GroupVersion()
		plural, singular := gv.WithResource(k.resource), gv.WithResource(strings.ToLower(k.gvk.Kind))
		m.AddSpecific(k.gvk, plural, singular, k.scope)
		// The informers ask for the scope of a list's kind too (their List through a
		// cache of some namespaces); discovery's mapper knows every kind's list.
		m.AddSpecific(gv.WithKind(k.gvk.Kind+"List"), plural, singular, k.scope)
	}
	return m
}
