package controllers

import (
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
)

// BenchmarkStatusPatch measures making the hub's status patch of a ClusterSet of 1,000
// members and 10,000 exports whose status fills what it may hold (MaxStatusClusters
// members, MaxStatusExports exports), after a change of one count: "status" as the hub
// makes it (statusPatch), "whole-object" as a merge patch between the two whole
// objects, spec included, would be made.
func BenchmarkStatusPatch(b *testing.B) {
	cs, _ := bigset.New(bigset.MaxClusters, bigset.Exports)
	for i := range plan.MaxStatusClusters {
		cs.Status.Clusters = append(cs.Status.Clusters, straitv1.ClusterStatus{Name: bigset.Name(i),
			GlobalCIDR: fmt.Sprintf("242.%d.%d.0/18", i/4, i%4*64),
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
				Reason: straitv1.ReasonApplied, Message: "30003 objects in place"}}})
	}
	for _, e := range cs.Spec.Exports[:plan.MaxStatusExports] {
		cs.Status.Exports = append(cs.Status.Exports, straitv1.ExportStatus{Namespace: e.Namespace, Name: e.Name,
			Type: "ClusterSetIP", Clusters: e.Clusters})
	}
	changed := cs.DeepCopy()
	changed.Status.Summary.Exports++
	size := func(b *testing.B, p client.Patch, obj client.Object) {
		data, err := p.Data(obj)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) == 0 || len(data) > 100 {
			b.Fatalf("the patch is %d bytes (%s), want the one count", len(data), data)
		}
	}
	b.Run("status", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, p := statusPatch(cs, changed)
			size(b, p, obj)
		}
	})
	b.Run("whole-object", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			size(b, client.MergeFrom(cs.DeepCopy()), changed.DeepCopy())
		}
	})
}
