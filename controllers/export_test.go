package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// WatchedKinds are the kinds the hub watches in members, for the tests of package
// controllers_test that connect to members as the hub does.
func WatchedKinds() []members.Watch { return watchedKinds() }

// MemberPrints is the hub's members.Options.Prints.
func MemberPrints(key members.Key) members.PrintFunc { return memberPrints(key) }

// PrintedKinds are the kinds whose print the member's informers keep (the resync's
// check compares the others' with the member's report).
func PrintedKinds() []string {
	var out []string
	for _, pk := range prunable() {
		if !memberprint.Reported(pk.kind) {
			out = append(out, pk.kind)
		}
	}
	return out
}

// ListedPrint is the print of kind that a list through rd gives: the objects carrying
// the ClusterSet's labels in the namespace the hub writes the kind in, fingerprinted as
// the member prints are (objectPrint). The prints kept from the informers' events must
// come to equal it.
func ListedPrint(ctx context.Context, rd client.Reader, cs types.NamespacedName, kind string) (members.Print, error) {
	sel := client.MatchingLabels{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: plan.ClusterSetLabel(cs)}
	for _, pk := range prunable() {
		if pk.kind != kind {
			continue
		}
		if err := rd.List(ctx, pk.list, sel, client.InNamespace(pk.namespace)); err != nil {
			return members.Print{}, err
		}
		items, err := meta.ExtractList(pk.list)
		if err != nil {
			return members.Print{}, err
		}
		p := members.Print{N: len(items)}
		for _, it := range items {
			o, ok := it.(client.Object)
			if !ok {
				return members.Print{}, fmt.Errorf("%T is no object", it)
			}
			p.Sum += objectPrint(kind, o)
		}
		return p, nil
	}
	return members.Print{}, fmt.Errorf("the hub writes no %s", kind)
}
