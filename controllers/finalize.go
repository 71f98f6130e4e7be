package controllers

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func clusterSetName(obj *straitv1.ClusterSet) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
}

// finalize removes everything the hub wrote for a deleted ClusterSet from every member,
// then releases the ClusterSet. A member that cannot be reached holds the deletion until
// it comes back or its kubeconfig Secret is deleted (then there is nothing to reach).
// A suspended ClusterSet is released at once and leaves members as they are.
func (r *ClusterSetReconciler) finalize(ctx context.Context, obj *straitv1.ClusterSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, straitv1.Finalizer) {
		return ctrl.Result{}, nil
	}
	rec, err := r.readRecords(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !obj.Spec.Suspend {
		conns := r.connect(ctx, obj, rec.known(obj), true)
		var blocked []string
		for _, c := range conns {
			c.removed = true
		}
		results := r.writeMembers(ctx, obj, nil, conns)
		for name, res := range results {
			// Without a kubeconfig and without a way in, there is nothing to clean.
			gone := conns[name].noKubeConfig && res.unreachable
			if conns[name].member != nil && !res.cleaned && !gone {
				blocked = append(blocked, fmt.Sprintf("%s (%s)", name, errString(res.err)))
			}
		}
		if len(blocked) > 0 {
			msg := "cannot remove the clusterset's objects from " + strings.Join(blocked, ", ")
			setCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, straitv1.ReasonPruneFailed, msg)
			r.event(obj, "Warning", straitv1.ReasonPruneFailed, "Finalize", "%s", msg)
			return ctrl.Result{RequeueAfter: r.cfg.RetryInterval}, nil
		}
	}
	// The ClusterSetMembers are the ClusterSet's (owner references) and would go with it;
	// they are deleted here so that nothing is left where no garbage collector runs.
	if _, err := r.writeRecords(ctx, obj, rec, nil); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(obj.DeepCopy())
	controllerutil.RemoveFinalizer(obj, straitv1.Finalizer)
	if err := r.hub.Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.forget(clusterSetName(obj))
	return ctrl.Result{}, nil
}
