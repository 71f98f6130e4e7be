package clustersetip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/kubewatch"
)

// DefaultDebounce gathers a burst of changes into one pass.
const DefaultDebounce = 100 * time.Millisecond

// retryAfter is how soon a pass that could not write everything is tried again.
const retryAfter = 2 * time.Second

// Writer keeps spec.ips of every ServiceImport equal to the cluster IPs of its derived
// Service: level-triggered, every change to either kind leads to a pass over all
// imports, which writes only those that differ.
type Writer struct {
	informers cache.Cache
	client    client.Client
	log       *slog.Logger
	debounce  time.Duration
	dirty     chan struct{}
}

// New makes a Writer reading and writing through cfg.
func New(cfg *rest.Config, log *slog.Logger) (*Writer, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), mcsv1.Install(scheme)); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	derived, err := labels.NewRequirement(straitv1.LabelServiceImport, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	// Only Strait's derived Services are listed and watched; the cluster's own are not
	// held in memory.
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme, ReaderFailOnMissingInformer: true,
		ByObject:         map[client.Object]cache.ByObject{&corev1.Service{}: {Label: labels.NewSelector().Add(*derived)}},
		DefaultTransform: cache.TransformStripManagedFields(), NewInformer: kubewatch.NewSharedIndexInformer})
	if err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Writer{informers: informers, client: c, log: log, debounce: DefaultDebounce, dirty: make(chan struct{}, 1)}, nil
}

// Run watches and writes until ctx is done.
func (w *Writer) Run(ctx context.Context) error {
	for _, o := range []client.Object{&mcsv1.ServiceImport{}, &corev1.Service{}} {
		inf, err := w.informers.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", o, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.markDirty() },
			UpdateFunc: func(any, any) { w.markDirty() },
			DeleteFunc: func(any) { w.markDirty() },
		}); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- w.informers.Start(ctx) }()
	if !w.informers.WaitForCacheSync(ctx) {
		return <-errc
	}
	timer := time.NewTimer(0)
	for {
		select {
		case <-ctx.Done():
			return <-errc
		case <-w.dirty:
			timer.Reset(w.debounce)
		case <-timer.C:
			if err := w.Pass(ctx); err != nil {
				w.log.Error("writing clusterset IPs", "err", err)
				timer.Reset(retryAfter)
			}
		}
	}
}

func (w *Writer) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// Pass writes spec.ips of every import whose derived Service's cluster IPs differ.
func (w *Writer) Pass(ctx context.Context) error {
	var imports mcsv1.ServiceImportList
	if err := w.informers.List(ctx, &imports); err != nil {
		return err
	}
	var services corev1.ServiceList
	if err := w.informers.List(ctx, &services); err != nil {
		return err
	}
	want := WantedIPs(imports.Items, services.Items)
	var errs []error
	for i := range imports.Items {
		si := &imports.Items[i]
		k := types.NamespacedName{Namespace: si.Namespace, Name: si.Name}
		if slices.Equal(si.Spec.IPs, want[k]) {
			continue
		}
		if err := w.write(ctx, si, want[k]); err != nil {
			errs = append(errs, err)
			continue
		}
		w.log.Info("clusterset IP", "serviceimport", k.String(), "ips", want[k])
	}
	return errors.Join(errs...)
}

// write applies spec.ips alone, under the writer's field manager; no IPs releases the
// field (the apply no longer names it). An import that went away meanwhile is no error:
// the apply cannot create one (its type and ports are required), and the UID
// precondition keeps it from touching a new one of the same name.
func (w *Writer) write(ctx context.Context, si *mcsv1.ServiceImport, ips []string) error {
	spec := map[string]any{}
	if len(ips) > 0 {
		list := make([]any, len(ips))
		for i, ip := range ips {
			list[i] = ip
		}
		spec["ips"] = list
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcsv1.GroupVersion.String(), "kind": "ServiceImport",
		"metadata": map[string]any{"name": si.Name, "namespace": si.Namespace, "uid": string(si.UID)},
		"spec":     spec,
	}}
	err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(straitv1.FieldManagerClusterSetIP), client.ForceOwnership)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ServiceImport %s/%s: %w", si.Namespace, si.Name, err)
	}
	return nil
}

// WantedIPs are, per ClusterSetIP import, the cluster IPs of its derived Service: the
// Service in the import's namespace that the hub wrote (managed-by strait-hub) with the
// import's name in its strait.io/service-import label; by name when there are several.
// An import without one (a headless import, or one whose Service is not there yet)
// wants none.
func WantedIPs(imports []mcsv1.ServiceImport, services []corev1.Service) map[types.NamespacedName][]string {
	derived := map[types.NamespacedName][]*corev1.Service{}
	for i := range services {
		s := &services[i]
		name := s.Labels[straitv1.LabelServiceImport]
		if name == "" || s.Labels[straitv1.LabelManagedBy] != straitv1.ManagedByHub {
			continue
		}
		k := types.NamespacedName{Namespace: s.Namespace, Name: name}
		derived[k] = append(derived[k], s)
	}
	out := map[types.NamespacedName][]string{}
	for i := range imports {
		si := &imports[i]
		k := types.NamespacedName{Namespace: si.Namespace, Name: si.Name}
		cands := derived[k]
		if si.Spec.Type != mcsv1.ClusterSetIP || len(cands) == 0 {
			continue
		}
		sort.Slice(cands, func(a, b int) bool { return cands[a].Name < cands[b].Name })
		s := cands[0]
		ips := s.Spec.ClusterIPs
		if len(ips) == 0 && s.Spec.ClusterIP != "" {
			ips = []string{s.Spec.ClusterIP}
		}
		if len(ips) == 0 || ips[0] == corev1.ClusterIPNone {
			continue
		}
		out[k] = slices.Clone(ips)
	}
	return out
}
