package clustersetip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
	"github.com/straitnet/strait/internal/kubewatch"
)

// DefaultDebounce gathers a burst of changes into one pass.
const DefaultDebounce = 100 * time.Millisecond

// retryAfter is how soon a pass that could not write everything is tried again.
const retryAfter = 2 * time.Second

// Writer keeps spec.ips of every ServiceImport equal to the cluster IPs of its derived
// Service: level-triggered, every change to either leads to a pass over all imports,
// which writes only those that differ.
//
// It runs inside strait dns and reads the imports from the snapshots strait dns answers
// from (Observe), which hold every import already; it watches only the hub's derived
// Services itself, and keeps of each only the facts a pass reads (Derived). A cache of
// its own of the typed imports, even trimmed, doubled strait dns's memory at 10,000
// imports (17.9 -> 36.3 MiB RssAnon, make bench-gate).
type Writer struct {
	imports   rest.Interface // the MCS API group, for the applies
	reflector *toolscache.Reflector
	log       *slog.Logger
	debounce  time.Duration
	dirty     chan struct{}

	mu       sync.Mutex
	snapshot *resolver.Snapshot               // the latest observed, nil before the first
	derived  map[types.NamespacedName]Derived // by the Service's own name
	synced   bool                             // the derived Services were listed
}

// Import is what a pass reads of a ServiceImport.
type Import struct {
	Key          types.NamespacedName
	ClusterSetIP bool
	IPs          []string
}

// ImportOf is si's facts.
func ImportOf(si *mcsv1.ServiceImport) Import {
	return Import{Key: types.NamespacedName{Namespace: si.Namespace, Name: si.Name},
		ClusterSetIP: si.Spec.Type == mcsv1.ClusterSetIP, IPs: si.Spec.IPs}
}

// importOf is the facts of an import as a snapshot holds it.
func importOf(svc resolver.Service) Import {
	f := Import{Key: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, ClusterSetIP: !svc.Headless}
	for _, a := range svc.IPs {
		f.IPs = append(f.IPs, a.String())
	}
	return f
}

// Derived is what a pass reads of a Service the hub derived from an import.
type Derived struct {
	// Key is the Service's own namespace and name.
	Key types.NamespacedName
	// Import is the name of the import in the same namespace it was derived from.
	Import string
	// IPs are its allocated cluster IPs; none while it has none or is headless.
	IPs []string
}

// DerivedOf is s's facts, and false when s is not a Service the hub derived: one that
// the hub wrote (managed-by strait-hub) with an import's name in its
// strait.io/service-import label. A Service that only carries the label is not.
func DerivedOf(s *corev1.Service) (Derived, bool) {
	name := s.Labels[straitv1.LabelServiceImport]
	if name == "" || s.Labels[straitv1.LabelManagedBy] != straitv1.ManagedByHub {
		return Derived{}, false
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	if len(ips) > 0 && ips[0] == corev1.ClusterIPNone {
		ips = nil
	}
	return Derived{Key: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, Import: name, IPs: slices.Clone(ips)}, true
}

// New makes a Writer reading and writing through cfg.
func New(cfg *rest.Config, log *slog.Logger) (*Writer, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), mcsv1.Install(scheme)); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating HTTP client: %w", err)
	}
	client := func(gv schema.GroupVersion, apiPath string) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath = &gv, apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		return rest.RESTClientForConfigAndClient(c, httpClient)
	}
	imports, err := client(mcsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	w := &Writer{imports: imports, log: log, debounce: DefaultDebounce, dirty: make(chan struct{}, 1),
		derived: map[types.NamespacedName]Derived{}}
	// Only Strait's derived Services are listed and watched; the cluster's own are not.
	lw := toolscache.NewFilteredListWatchFromClient(core, "services", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = straitv1.LabelServiceImport })
	w.reflector = toolscache.NewReflectorWithOptions(kubewatch.Resuming(lw), &corev1.Service{}, derivedStore{w: w},
		toolscache.ReflectorOptions{Name: "strait-dns/clusterset-ips"})
	return w, nil
}

// Observe hands the writer the imports of a snapshot of strait dns's source (dns/source)
// it publishes: each is a new view of every ServiceImport in the member.
func (w *Writer) Observe(snap *resolver.Snapshot) {
	w.mu.Lock()
	w.snapshot = snap
	w.mu.Unlock()
	w.markDirty()
}

// Run watches and writes until ctx is done.
func (w *Writer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { w.reflector.RunWithContext(ctx) })
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.dirty:
			if w.isSynced() {
				timer.Reset(w.debounce)
			}
		case <-timer.C:
			if err := w.Pass(ctx); err != nil && ctx.Err() == nil {
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

// isSynced says whether the writer has seen every import and every derived Service.
func (w *Writer) isSynced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced && w.snapshot != nil
}

// Pass writes spec.ips of every import whose derived Service's cluster IPs differ.
func (w *Writer) Pass(ctx context.Context) error {
	w.mu.Lock()
	snap := w.snapshot
	derived := make([]Derived, 0, len(w.derived))
	for _, d := range w.derived {
		derived = append(derived, d)
	}
	w.mu.Unlock()
	var imports []Import
	snap.EachImport(func(svc resolver.Service) {
		imports = append(imports, importOf(svc))
	})
	want := WantedIPs(imports, derived)
	var errs []error
	for _, si := range imports {
		if slices.Equal(si.IPs, want[si.Key]) {
			continue
		}
		if err := w.write(ctx, si.Key, want[si.Key]); err != nil {
			errs = append(errs, err)
			continue
		}
		w.log.Info("clusterset IP", "serviceimport", si.Key.String(), "ips", want[si.Key])
	}
	return errors.Join(errs...)
}

// write applies spec.ips alone, under the writer's field manager; no IPs releases the
// field (the apply no longer names it). An import that went away meanwhile is no error:
// the apply cannot create one (its type and ports are required: the API server refuses
// it as invalid) and the latest snapshot no longer holds it. One deleted and made again
// under the same name meanwhile may get the IPs meant for the old one until the next
// pass, which the new one's snapshot brings: the derived Service is named after the
// import, so a ClusterSetIP import of the same name has the same IPs anyway.
func (w *Writer) write(ctx context.Context, key types.NamespacedName, ips []string) error {
	spec := map[string]any{}
	if len(ips) > 0 {
		spec["ips"] = ips
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": mcsv1.GroupVersion.String(), "kind": "ServiceImport",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace},
		"spec":     spec,
	})
	if err != nil {
		return err
	}
	err = w.imports.Patch(types.ApplyPatchType).Namespace(key.Namespace).Resource("serviceimports").Name(key.Name).
		Param("fieldManager", straitv1.FieldManagerClusterSetIP).Param("force", "true").Body(body).Do(ctx).Error()
	if apierrors.IsInvalid(err) && w.gone(key) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ServiceImport %s: %w", key, err)
	}
	return nil
}

// gone says whether the latest snapshot no longer holds the import key. One that still
// does but is gone from the API server is an error for now: the pass is tried again
// (retryAfter), by when its deletion has reached the snapshot.
func (w *Writer) gone(key types.NamespacedName) bool {
	w.mu.Lock()
	snap := w.snapshot
	w.mu.Unlock()
	return snap.Entry(resolver.KeyOf(&resolver.Service{Name: key.Name, Namespace: key.Namespace})) == nil
}

// WantedIPs are, per ClusterSetIP import, the cluster IPs of its derived Service (by
// the Service's name when there are several). An import without one (a headless
// import, or one whose Service is not there yet or has no IP yet) wants none.
func WantedIPs(imports []Import, services []Derived) map[types.NamespacedName][]string {
	byImport := map[types.NamespacedName][]Derived{}
	for _, d := range services {
		k := types.NamespacedName{Namespace: d.Key.Namespace, Name: d.Import}
		byImport[k] = append(byImport[k], d)
	}
	out := map[types.NamespacedName][]string{}
	for _, si := range imports {
		cands := byImport[si.Key]
		if !si.ClusterSetIP || len(cands) == 0 {
			continue
		}
		sort.Slice(cands, func(a, b int) bool { return cands[a].Key.Name < cands[b].Key.Name })
		if ips := cands[0].IPs; len(ips) > 0 {
			out[si.Key] = slices.Clone(ips)
		}
	}
	return out
}
