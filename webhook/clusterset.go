package webhook

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// ValidatePath is where the API server sends ClusterSet admission reviews.
const ValidatePath = "/validate-strait-io-v1alpha1-clusterset"

// ClusterSetValidator refuses ClusterSets that plan.Validate rejects.
type ClusterSetValidator struct{}

var _ admission.Validator[*straitv1.ClusterSet] = ClusterSetValidator{}

// SetupWithManager registers the webhook on the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &straitv1.ClusterSet{}).
		WithValidator(ClusterSetValidator{}).
		WithValidatorCustomPath(ValidatePath).
		Complete()
}

// ValidateCreate validates a new ClusterSet.
func (ClusterSetValidator) ValidateCreate(_ context.Context, cs *straitv1.ClusterSet) (admission.Warnings, error) {
	return warnings(cs), validate(cs)
}

// ValidateUpdate validates a changed ClusterSet. A ClusterSet being deleted is let
// through, so that a finalizer can always be removed.
func (ClusterSetValidator) ValidateUpdate(_ context.Context, _, cs *straitv1.ClusterSet) (admission.Warnings, error) {
	if !cs.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return warnings(cs), validate(cs)
}

// ValidateDelete lets every deletion through.
func (ClusterSetValidator) ValidateDelete(context.Context, *straitv1.ClusterSet) (admission.Warnings, error) {
	return nil, nil
}

func validate(cs *straitv1.ClusterSet) error {
	errs := plan.Validate(cs)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(straitv1.GroupVersion.WithKind(straitv1.ClusterSetKind).GroupKind(), cs.Name, errs)
}

// warnings point at settings that are valid but probably not meant.
func warnings(cs *straitv1.ClusterSet) admission.Warnings {
	var w admission.Warnings
	for _, c := range cs.Spec.Clusters {
		if c.KubeConfig == nil {
			w = append(w, "spec.clusters["+c.Name+"].kubeConfig is empty: the hub writes this cluster's objects into the hub's own cluster")
		}
	}
	if cs.Spec.Cable.Driver == straitv1.CableVXLAN {
		w = append(w, "spec.cable.driver vxlan does not encrypt traffic between clusters")
	}
	return w
}
