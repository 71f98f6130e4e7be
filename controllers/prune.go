package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// prunable are the kinds the hub writes, as lists to find them by label.
// Strait's own kinds live in strait-system only (the member role grants no more).
func prunable() []struct {
	kind      string
	list      client.ObjectList
	namespace string
} {
	return []struct {
		kind      string
		list      client.ObjectList
		namespace string
	}{
		{"Membership", &straitv1.MembershipList{}, straitv1.SystemNamespace},
		{"Peer", &straitv1.PeerList{}, straitv1.SystemNamespace},
		{"GlobalIngress", &straitv1.GlobalIngressList{}, straitv1.SystemNamespace},
		{"ServiceExport", &mcsv1.ServiceExportList{}, ""},
		{"ServiceImport", &mcsv1.ServiceImportList{}, ""},
		{"EndpointSlice", &discoveryv1.EndpointSliceList{}, ""},
		{"Service", &corev1.ServiceList{}, ""},
	}
}

// OwnedObject is an object the hub wrote into a member for a ClusterSet.
type OwnedObject struct {
	Kind   string
	Object client.Object
}

// ListOwned lists what carries the ClusterSet's labels in a member: every kind the hub
// writes, read through rd, and the IPsec PSK Secret, looked up by name through direct
// (Secrets are not watched). The hub prunes from this list and `strait diff` shows what
// the hub would prune. A kind that cannot be listed is an error; the others are still
// returned.
func ListOwned(ctx context.Context, rd, direct client.Reader, cs types.NamespacedName) ([]OwnedObject, error) {
	return listOwned(ctx, rd, direct, cs, nil)
}

// listOwned is ListOwned with the kinds the hub does not watch (memberprint.Reported)
// listed page by page through direct, or taken from held when a full pass listed them.
func listOwned(ctx context.Context, rd, direct client.Reader, cs types.NamespacedName, held map[objKey]client.Object) ([]OwnedObject, error) {
	var errs []error
	var out []OwnedObject
	for _, pk := range prunable() {
		if memberprint.Reported(pk.kind) && held != nil {
			for k, o := range held {
				if k.kind == pk.kind {
					out = append(out, OwnedObject{Kind: pk.kind, Object: o})
				}
			}
			continue
		}
		list := listAll // the informers: every object at once (they do not page)
		src := rd
		if memberprint.Reported(pk.kind) {
			list, src = listPaged, direct
		}
		items, err := list(ctx, src, pk.list, ownedBy(cs), client.InNamespace(pk.namespace))
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", pk.kind, err))
			continue
		}
		for _, o := range items {
			out = append(out, OwnedObject{Kind: pk.kind, Object: o})
		}
	}
	switch s, err := ownedPSKSecret(ctx, direct, cs); {
	case err != nil:
		errs = append(errs, err)
	case s != nil:
		out = append(out, OwnedObject{Kind: "Secret", Object: s})
	}
	return out, errors.Join(errs...)
}

// ownedPSKSecret is the member's copy of the IPsec key when it carries the ClusterSet's
// label, nil when there is none. Secrets are not watched (the hub reads no Secret in
// members): it is looked up by name through direct.
func ownedPSKSecret(ctx context.Context, direct client.Reader, cs types.NamespacedName) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := direct.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, s)
	switch {
	case err == nil && s.Labels[straitv1.LabelClusterSet] == plan.ClusterSetLabel(cs):
		return s, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Secret %s/%s: %w", straitv1.SystemNamespace, plan.IPsecPSKSecretName, err)
	}
	return nil, nil
}

// prune deletes what carries the ClusterSet's labels in the member but is not desired
// (everything, when desired is nil). The inventory is the labels themselves, read from
// the member, so objects written before a hub restart are found too. A routine prune
// reads the informers; a final one (desired nil: the cluster left, or the ClusterSet is
// deleted) reads the API server, so that nothing the informers have not seen yet stays.
func (w *memberWriter) prune(ctx context.Context, desired map[objKey]bool) (int, error) {
	rd := w.m.Reader
	if desired == nil {
		rd = w.m.Client
	}
	owned, err := listOwned(ctx, rd, w.m.Client, w.cs, w.held)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	n := 0
	for _, o := range owned {
		k := keyOf(o.Kind, o.Object)
		if desired[k] {
			continue
		}
		if err := w.delete(ctx, k, o.Object); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// prunePSKSecret deletes the member's copy of the IPsec key unless desired (a pass over
// the base group prunes it so; a full pass through ListOwned).
func (w *memberWriter) prunePSKSecret(ctx context.Context, desired map[objKey]bool) (int, error) {
	psk := objKey{kind: "Secret", namespace: straitv1.SystemNamespace, name: plan.IPsecPSKSecretName}
	if desired[psk] {
		return 0, nil
	}
	s, err := ownedPSKSecret(ctx, w.m.Client, w.cs)
	if err != nil || s == nil {
		return 0, err
	}
	if err := w.delete(ctx, psk, s); err != nil {
		return 0, err
	}
	return 1, nil
}

// releaseLeftClusters drops the connection and the applied-object table of every
// cluster that left the ClusterSet and holds nothing of it any more: the hub has no
// reason to watch it again.
func (r *ClusterSetReconciler) releaseLeftClusters(obj *straitv1.ClusterSet, results map[string]*memberResult) {
	for name, res := range results {
		if !res.cleaned {
			continue
		}
		r.event(obj, "Normal", straitv1.ReasonPruning, "Prune", "cluster %s left the clusterset: %d objects removed", name, res.pruned)
		r.release(members.Key{ClusterSet: clusterSetName(obj), Cluster: name})
	}
}

func (w *memberWriter) delete(ctx context.Context, k objKey, o client.Object) error {
	w.table.drop(k)
	err := w.m.Client.Delete(ctx, o, client.Preconditions{UID: ptr(o.GetUID())}, client.PropagationPolicy("Background"))
	w.table.wrote(time.Now())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pruning %s %s/%s: %w", k.kind, k.namespace, k.name, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
