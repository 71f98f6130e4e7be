package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// heldPage is how many objects a listing of a member's objects asks for at a time: a
// member holds some 30,000 of the hub's per-import objects at 10,000 exports.
const heldPage = 500

// heldObjects lists, page by page from the member's API server, the objects of the
// kinds the hub does not watch (memberprint.Reported) that carry the ClusterSet's
// labels, as the informers would hold them (asInformers). A full pass reads them once,
// compares and prunes with them, and drops them: the hub keeps no copy of them between
// passes.
func (w *memberWriter) heldObjects(ctx context.Context) (map[objKey]client.Object, error) {
	out := map[objKey]client.Object{}
	for _, pk := range prunable() {
		if !memberprint.Reported(pk.kind) {
			continue
		}
		items, err := listPaged(ctx, w.m.Client, pk.list, ownedBy(w.cs), client.InNamespace(pk.namespace))
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", pk.kind, err)
		}
		for _, o := range items {
			out[keyOf(pk.kind, o)] = w.asInformers(pk.kind, o)
		}
	}
	return out, nil
}

// ownedBy selects what the hub wrote for the ClusterSet cs.
func ownedBy(cs types.NamespacedName) client.MatchingLabels {
	return client.MatchingLabels{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: plan.ClusterSetLabel(cs)}
}

// listPaged lists from an API server into copies of proto (an empty list of the
// kind), heldPage objects a request, and returns the items. Not for an informer cache,
// which takes a limit but gives no continue token: it would return the first page only.
func listPaged(ctx context.Context, rd client.Reader, proto client.ObjectList, opts ...client.ListOption) ([]client.Object, error) {
	var out []client.Object
	cont := ""
	for {
		l, ok := proto.DeepCopyObject().(client.ObjectList)
		if !ok {
			return nil, fmt.Errorf("listing %T: not a list", proto)
		}
		page := append(opts, client.Limit(heldPage))
		if cont != "" {
			page = append(page, client.Continue(cont))
		}
		items, err := listAll(ctx, rd, l, page...)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if cont = l.GetContinue(); cont == "" {
			return out, nil
		}
	}
}

// listAll lists into l in one request and returns its items as objects.
func listAll(ctx context.Context, rd client.Reader, l client.ObjectList, opts ...client.ListOption) ([]client.Object, error) {
	if err := rd.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			out = append(out, o)
		}
	}
	return out, nil
}
