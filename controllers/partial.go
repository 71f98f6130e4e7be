package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// groupDigests are the plan's groups for a member, with the PSK the hub fills in
// counted in the base group (Keys[0]).
func groupDigests(p *plan.Plan, cluster string, psk pskData) plan.Groups {
	groups := p.Groups(cluster)
	if len(groups.Keys) > 0 {
		groups = groups.WithBase(pskDigest(psk))
	}
	return groups
}

// changedGroups are the groups whose digest differs between two passes, or that only
// one of them has: one walk over both sorted lists.
func changedGroups(last, cur plan.Groups) map[string]bool {
	out := map[string]bool{}
	i, j := 0, 0
	for i < len(last.Keys) || j < len(cur.Keys) {
		switch {
		case j == len(cur.Keys) || i < len(last.Keys) && last.Keys[i] < cur.Keys[j]:
			out[last.Keys[i]] = true // gone
			i++
		case i == len(last.Keys) || cur.Keys[j] < last.Keys[i]:
			out[cur.Keys[j]] = true // new
			j++
		default:
			if last.Digest(i) != cur.Digest(j) {
				out[cur.Keys[j]] = true
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// writeGroups is a pass over the changed groups of a member that holds what the last
// pass left (whose groups were last): only their objects are built, applied and pruned.
// The resync and any doubt about the member (see appliedTable.lastGroups) make a full
// pass instead.
func (w *memberWriter) writeGroups(ctx context.Context, p *plan.Plan, cluster string, psk pskData, changed map[string]bool, last plan.Groups, res *memberResult) error {
	if err := w.checkOwner(ctx); err != nil {
		return err
	}
	desired, errs, going, err := w.applyAll(ctx, withPSK(p.ObjectsOf(cluster, changed), psk), psk, res)
	if err != nil {
		return err
	}
	conds := map[types.NamespacedName][]metav1.Condition{}
	for k, c := range p.ServiceExportConditions(cluster) {
		if changed[k.String()] {
			conds[k] = c
		}
	}
	errs = append(errs, w.exportConditions(ctx, conds)...)
	if len(errs) == 0 {
		for g := range changed {
			if _, had := slices.BinarySearch(last.Keys, g); !had && w.trustsAll() {
				// A group the last pass did not have left nothing there, and the member
				// holds what the last pass left: a new export is written, not read.
				continue
			}
			n, err := w.pruneGroup(ctx, g, desired)
			res.pruned += n
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	res.inventory = w.table.inventory()
	return summarize(append(errs, going...))
}

// pruneGroup deletes the objects of one group the member holds but the plan no longer
// wants: the base group's found by listing, an export group's where plan.ExportGroupOf
// says the plan puts them.
func (w *memberWriter) pruneGroup(ctx context.Context, group string, desired map[objKey]bool) (int, error) {
	sel := ownedBy(w.cs)
	var held []client.Object
	if group == plan.BaseGroup {
		lists := []client.ObjectList{&straitv1.MembershipList{}}
		if w.mayHoldOtherPeers(desired) {
			lists = append(lists, &straitv1.PeerList{})
		}
		for _, l := range lists {
			items, err := w.list(ctx, l, sel, client.InNamespace(straitv1.SystemNamespace))
			if err != nil {
				return 0, err
			}
			held = append(held, items...)
		}
		// The PSK Secret is not watched; prune by name as a full pass does.
		return w.prunePSK(ctx, desired, held)
	}
	// Where the export's objects live is the plan's to say, as it names them.
	eg, err := plan.ExportGroupOf(group)
	if err != nil {
		return 0, err
	}
	for _, o := range eg.Named {
		k := keyOf(kindOf(o), o)
		if desired[k] {
			continue // applied just now
		}
		if _, recorded := w.table.get(k); w.trusts(k.kind) && !recorded {
			continue // the member holds what the record says: not there
		}
		if err := w.reader(k.kind).Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			held = append(held, o)
		} else if client.IgnoreNotFound(err) != nil {
			return 0, err
		}
	}
	for _, labels := range eg.SliceLabels {
		heldSlices, err := w.list(ctx, &discoveryv1.EndpointSliceList{}, sel, client.InNamespace(eg.SliceNamespace), client.MatchingLabels(labels))
		if err != nil {
			return 0, err
		}
		held = append(held, heldSlices...)
	}
	return w.pruneHeld(ctx, desired, held)
}

// mayHoldOtherPeers says whether the member may hold Peers of the ClusterSet besides
// the desired ones, which the pass just applied: unless the report of Peers was the
// record when the pass began, and the record now counts no more Peers than are desired
// (a member added to the ClusterSet, the Peers' common case, adds one to each member
// and takes none away), their listing is needed to find those to prune.
func (w *memberWriter) mayHoldOtherPeers(desired map[objKey]bool) bool {
	if !w.trusts("Peer") {
		return true
	}
	n := 0
	for k := range desired {
		if k.kind == "Peer" {
			n++
		}
	}
	return w.table.printOf("Peer").N > n
}

// prunePSK prunes the held objects and, unless desired, the PSK Secret.
func (w *memberWriter) prunePSK(ctx context.Context, desired map[objKey]bool, held []client.Object) (int, error) {
	n, err := w.pruneHeld(ctx, desired, held)
	m, perr := w.prunePSKSecret(ctx, desired)
	return n + m, errors.Join(err, perr)
}

// pruneHeld deletes the held objects that carry the ClusterSet's labels and are not
// desired.
func (w *memberWriter) pruneHeld(ctx context.Context, desired map[objKey]bool, held []client.Object) (int, error) {
	var errs []error
	n := 0
	for _, o := range held {
		if o.GetLabels()[straitv1.LabelManagedBy] != straitv1.ManagedByHub ||
			o.GetLabels()[straitv1.LabelClusterSet] != plan.ClusterSetLabel(w.cs) {
			continue
		}
		k := keyOf(kindOf(o), o)
		if desired[k] {
			continue
		}
		if err := w.delete(ctx, k, o); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// list lists from the informers, or the member's API server for the kinds the hub
// does not watch, the items as objects.
func (w *memberWriter) list(ctx context.Context, l client.ObjectList, opts ...client.ListOption) ([]client.Object, error) {
	rd := w.m.Reader
	switch l.(type) {
	case *discoveryv1.EndpointSliceList, *straitv1.PeerList: // the hub's are not watched
		rd = w.m.Client
	}
	if err := rd.List(ctx, l, opts...); err != nil {
		return nil, fmt.Errorf("listing %T: %w", l, err)
	}
	var out []client.Object
	switch l := l.(type) {
	case *straitv1.MembershipList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *straitv1.PeerList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *discoveryv1.EndpointSliceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("listing %T: not a kind the hub prunes by group", l)
	}
	return out, nil
}
