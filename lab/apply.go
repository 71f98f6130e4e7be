package lab

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applier creates objects that do not exist yet; objects that exist are left as they are,
// so a person's or a controller's later changes survive "lab up" run again.
type applier struct{ c client.Client }

// newApplier is an applier of client-go's kinds and CRDs.
func newApplier(cfg *rest.Config) (*applier, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	return &applier{c: c}, nil
}

// create creates obj unless it exists. A kind that is not served yet (a CRD just
// created) is retried for up to 30 s. It looks before it creates: a create goes through
// admission even when the object exists, and "lab up" again after the hub died finds
// the hub's ClusterSet webhook registered while strait hub, which serves it, is not yet
// running again.
func (a *applier) create(ctx context.Context, obj client.Object) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := a.c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if err == nil {
			return nil
		}
		err = a.c.Create(ctx, obj)
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil
		case (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		default:
			return fmt.Errorf("creating %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}
