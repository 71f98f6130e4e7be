package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// records are a ClusterSet's ClusterSetMembers by cluster, as the hub's cache holds
// them: one per member, and one per cluster that left but still holds objects.
type records map[string]*straitv1.ClusterSetMember

// readRecords lists the ClusterSet's ClusterSetMembers. Those of an earlier ClusterSet
// of the same name (another owner UID, about to be collected) are not its own.
func (r *ClusterSetReconciler) readRecords(ctx context.Context, obj *straitv1.ClusterSet) (records, error) {
	list := &straitv1.ClusterSetMemberList{}
	if err := r.hub.List(ctx, list, client.InNamespace(obj.Namespace),
		client.MatchingLabels{straitv1.LabelClusterSet: plan.ClusterSetLabel(clusterSetName(obj))}); err != nil {
		return nil, fmt.Errorf("listing the ClusterSetMembers: %w", err)
	}
	out := records{}
	for i := range list.Items {
		m := &list.Items[i]
		if m.Spec.ClusterSet == obj.Name && metav1.IsControlledBy(m, obj) {
			out[m.Spec.Cluster] = m
		}
	}
	return out, nil
}

// known is every cluster the hub last recorded for the ClusterSet: its ClusterSetMembers,
// and status.clusters for a cluster without one (a status written by a hub that kept no
// ClusterSetMembers). status.clusters alone lists only MaxStatusClusters of them.
func (rec records) known(obj *straitv1.ClusterSet) map[string]*straitv1.ClusterStatus {
	out := map[string]*straitv1.ClusterStatus{}
	for i := range obj.Status.Clusters {
		out[obj.Status.Clusters[i].Name] = &obj.Status.Clusters[i]
	}
	for name, m := range rec {
		out[name] = &m.Status
	}
	return out
}

// writeRecords makes the ClusterSet's ClusterSetMembers those of clusters (every
// member's status and every leaving cluster's): it applies those that differ from what
// the cache holds and deletes those of clusters no longer listed, MaxConcurrentMembers
// at a time.
func (r *ClusterSetReconciler) writeRecords(ctx context.Context, obj *straitv1.ClusterSet, rec records, clusters []straitv1.ClusterStatus) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, r.cfg.MaxConcurrentMembers)
	do := func(f func() error) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	listed := map[string]bool{}
	for i := range clusters {
		want := memberRecord(obj, &clusters[i])
		listed[want.Spec.Cluster] = true
		if have := rec[want.Spec.Cluster]; have != nil && sameRecord(have, want) {
			continue
		}
		do(func() error {
			body, err := applyRecord(want)
			if err == nil {
				err = r.hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(body),
					client.FieldOwner(straitv1.FieldManager), client.ForceOwnership)
			}
			if err != nil {
				return fmt.Errorf("writing ClusterSetMember %s: %w", want.Name, err)
			}
			return nil
		})
	}
	for name, have := range rec {
		if listed[name] {
			continue
		}
		do(func() error {
			err := r.hub.Delete(ctx, have, client.Preconditions{UID: &have.UID})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ClusterSetMember %s: %w", have.Name, err)
			}
			return nil
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// memberRecord is the ClusterSetMember of one cluster's status.
func memberRecord(obj *straitv1.ClusterSet, st *straitv1.ClusterStatus) *straitv1.ClusterSetMember {
	return &straitv1.ClusterSetMember{
		TypeMeta: metav1.TypeMeta{APIVersion: straitv1.GroupVersion.String(), Kind: straitv1.ClusterSetMemberKind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.Namespace,
			Name:      straitv1.ClusterSetMemberName(obj.Name, st.Name),
			Labels:    map[string]string{straitv1.LabelClusterSet: plan.ClusterSetLabel(clusterSetName(obj))},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: straitv1.GroupVersion.String(), Kind: straitv1.ClusterSetKind,
				Name: obj.Name, UID: obj.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(false)}},
		},
		Spec:   straitv1.ClusterSetMemberSpec{ClusterSet: obj.Name, Cluster: st.Name},
		Status: *st.DeepCopy(),
	}
}

// applyRecord is the body the hub applies for a ClusterSetMember: the whole object, as
// its JSON has it, without the creationTimestamp the API server sets.
func applyRecord(m *straitv1.ClusterSetMember) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u, err := applyMap(data)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: u}, nil
}

// sameRecord says whether the cached ClusterSetMember is the one the hub would apply.
func sameRecord(have, want *straitv1.ClusterSetMember) bool {
	return have.Labels[straitv1.LabelClusterSet] == want.Labels[straitv1.LabelClusterSet] &&
		equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) &&
		equality.Semantic.DeepEqual(have.Spec, want.Spec) &&
		equality.Semantic.DeepEqual(have.Status, want.Status)
}
