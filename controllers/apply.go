package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// memberResult is what writing one member did.
type memberResult struct {
	applied, pruned int
	// skipped: the member's inputs were those of the last successful pass, which still
	// holds (see appliedTable.current); nothing was read or written there.
	skipped   bool
	inventory map[string]int32
	// err: the member was unreachable (unreachable true) or refused writes.
	err         error
	unreachable bool
	// cleaned: a removed cluster holds nothing of the ClusterSet any more.
	cleaned bool
	// recheck: the member's report differs from the record but may not show the
	// hub's last writes yet; look again after this long (appliedTable.settle).
	recheck time.Duration
}

// writeMembers applies the plan to every reachable member and prunes, a bounded number
// of members at a time. Members that are unreachable are left alone. Without a plan
// (the ClusterSet is being deleted) every member is pruned.
func (r *ClusterSetReconciler) writeMembers(ctx context.Context, obj *straitv1.ClusterSet, p *plan.Plan, conns map[string]*conn) map[string]*memberResult {
	cs := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	var psk pskData
	if p != nil {
		psk.key, psk.err = r.ipsecPSK(ctx, p.IPsecPSKSource())
	}
	results := make(map[string]*memberResult, len(conns))
	now, resync := time.Now(), r.resyncInterval(obj)
	sem := make(chan struct{}, r.cfg.MaxConcurrentMembers)
	full := make(chan struct{}, r.cfg.fullPasses())
	fullPass := func(f func() error) error {
		full <- struct{}{}
		defer func() { <-full }()
		return f()
	}
	var wg sync.WaitGroup
	var membership straitv1.Membership // where each member's report is read (readReport)
	for name, c := range conns {
		res := &memberResult{}
		results[name] = res
		if c.removed && c.sameAs != "" {
			// One cluster under two names, one name gone: nothing to prune here that
			// the other's pass does not (see matchRemoved).
			res.cleaned = true
			continue
		}
		if !c.reachable() {
			res.err, res.unreachable = c.err, true
			continue
		}
		w := memberWriter{r: r, cs: cs, m: c.member, table: r.appliedFor(members.Key{ClusterSet: cs, Cluster: name})}
		var state passState
		if !c.removed {
			// Whether the member needs a pass is decided here, without a goroutine:
			// a change leaves nearly every member as it is, and at 1,000 members a
			// goroutine and the semaphore for each were 2 ms of a change's 30. Its
			// report is read from the informers' cache, synced as it is reachable.
			res.recheck = r.checkReport(ctx, &w, name, now, &membership)
			state = passState{digest: memberDigest(p, name, psk), member: c.member,
				since: c.member.Health().Since, now: now, resync: resync}
			if res.inventory, res.skipped = w.table.current(state); res.skipped {
				continue
			}
		}
		wg.Add(1)
		go func(w memberWriter, state passState) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var err error
			if c.removed {
				// What the last pass left is going: a cluster added back must be
				// passed over again, whatever its digest.
				w.table.failed()
				res.pruned, err = w.prune(ctx, nil)
				res.cleaned = err == nil
			} else {
				state = w.table.startPass(state)
				groups := groupDigests(p, name, psk)
				last, partial := w.table.lastGroups(state)
				switch {
				case partial:
					w.trustedKinds = w.table.trusted()
					err = w.writeGroups(ctx, p, name, psk, changedGroups(last, groups), last, res)
				case w.table.resyncDue(state):
					var checked bool
					if checked, err = w.check(ctx, p, name, psk, res); err == nil && !checked {
						err = fullPass(func() error { return w.write(ctx, p, name, psk, res) })
					}
				default:
					err = fullPass(func() error { return w.write(ctx, p, name, psk, res) })
				}
				if err == nil {
					w.table.passed(state, res.inventory, groups, !partial)
				} else {
					w.table.failed()
				}
				r.metrics.memberPasses.WithLabelValues(plan.ClusterSetLabel(cs), name).Inc()
			}
			res.err = err
			// A member that went away between the probe and the writes is unreachable,
			// not a member that refuses writes. Either way its kubeconfig is read again
			// next time: the credentials may be what it refuses.
			if err != nil {
				r.kubeConfigsRead.Delete(members.Key{ClusterSet: cs, Cluster: name})
				if perr := c.member.Probe(ctx); perr != nil {
					c.err, res.err, res.unreachable = perr, perr, true
				}
			}
			lbl := plan.ClusterSetLabel(cs)
			r.metrics.applied.WithLabelValues(lbl, name).Add(float64(res.applied))
			r.metrics.pruned.WithLabelValues(lbl, name).Add(float64(res.pruned))
		}(w, state)
	}
	wg.Wait()
	return results
}

// memberDigest is the plan's digest for a member with the PSK the hub fills in: what
// the hub wants there, whole.
func memberDigest(p *plan.Plan, cluster string, psk pskData) uint64 {
	return p.MemberDigest(cluster) ^ pskDigest(psk)
}

// pskDigest is a hash of the PSK the hub fills in, or of why it could not.
func pskDigest(psk pskData) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(psk.key)
	if psk.err != nil {
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(psk.err.Error()))
	}
	return h.Sum64()
}

// pskData is the IPsec pre-shared key read from the hub, or why it could not be read.
type pskData struct {
	key []byte
	err error
}

// ipsecPSK reads the pre-shared key the plan's PSK Secret carries into every member, nil
// when the plan has no PSK Secret (src nil). Only the hub may read the hub's Secrets, so
// the plan leaves the data to it.
func (r *ClusterSetReconciler) ipsecPSK(ctx context.Context, src *types.NamespacedName) ([]byte, error) {
	if src == nil {
		return nil, nil
	}
	s := &corev1.Secret{}
	if err := r.secrets.Get(ctx, *src, s); err != nil {
		return nil, fmt.Errorf("reading the IPsec PSK Secret %s: %w", src, err)
	}
	if len(s.Data[plan.IPsecPSKKey]) == 0 {
		return nil, fmt.Errorf("the IPsec PSK Secret %s has no key %q", src, plan.IPsecPSKKey)
	}
	return s.Data[plan.IPsecPSKKey], nil
}

// withPSK fills the key into the plan's PSK Secret. When the key could not be read the
// Secret is left out rather than applied empty, which would take the key the member
// holds away from its gateway; the error then also stops the prune, so the member keeps
// its copy.
func withPSK(objs []client.Object, psk pskData) []client.Object {
	out := objs[:0]
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Name == plan.IPsecPSKSecretName && s.Namespace == straitv1.SystemNamespace {
			if psk.err != nil {
				continue
			}
			s.Data = map[string][]byte{plan.IPsecPSKKey: psk.key}
		}
		out = append(out, o)
	}
	return out
}

// memberWriter writes one member.
type memberWriter struct {
	r     *ClusterSetReconciler
	cs    types.NamespacedName
	m     *members.Member
	table *appliedTable
	// trustedKinds are, in a partial pass, the kinds the hub does not watch whose
	// report was the record when the pass started (appliedTable.trusted): the member
	// then holds exactly what the hub recorded, so an object recorded with the same
	// content is in place and one not recorded is not there, and neither is read.
	trustedKinds map[string]bool
	// held are, in a full pass, the objects of those kinds the member holds with the
	// ClusterSet's labels, listed once from its API server when the pass starts (see
	// heldObjects) and dropped with the pass.
	held map[objKey]client.Object
}

// trusts says whether the pass takes the record for what the member holds of kind.
func (w *memberWriter) trusts(kind string) bool { return w.trustedKinds[kind] }

// trustsAll says whether the pass takes the record for every kind the hub does not
// watch.
func (w *memberWriter) trustsAll() bool {
	for _, kind := range memberprint.ReportedKinds() {
		if !w.trusts(kind) {
			return false
		}
	}
	return true
}

func (w *memberWriter) write(ctx context.Context, p *plan.Plan, cluster string, psk pskData, res *memberResult) error {
	if err := w.checkOwner(ctx); err != nil {
		return err
	}
	held, err := w.heldObjects(ctx)
	if err != nil {
		return err
	}
	w.held = held
	defer func() { w.held = nil }()
	objs := withPSK(p.Objects(cluster), psk)
	desired, errs, going, err := w.applyAll(ctx, objs, psk, res)
	if err != nil {
		return err
	}
	res.inventory = map[string]int32{}
	for _, o := range objs {
		res.inventory[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	errs = append(errs, w.exportConditions(ctx, p.ServiceExportConditions(cluster))...)
	// A failed apply may have left an object out: prune only on a complete write, so
	// nothing is deleted because of a transient error.
	if len(errs) == 0 {
		n, err := w.prune(ctx, desired)
		res.pruned += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return summarize(append(errs, going...))
}

// applyAll makes the namespaces objs need, then applies them (applyEach); errs has the
// PSK's error first, if any. err is a namespace that could not be made: nothing applied.
func (w *memberWriter) applyAll(ctx context.Context, objs []client.Object, psk pskData, res *memberResult) (desired map[objKey]bool, errs, going []error, err error) {
	if psk.err != nil {
		errs = append(errs, psk.err)
	}
	terminating, err := w.ensureNamespaces(ctx, objs)
	if err != nil {
		return nil, nil, nil, errors.Join(append(errs, err)...)
	}
	desired, applyErrs, going := w.applyEach(ctx, objs, terminating, res)
	return desired, append(errs, applyErrs...), going, nil
}

// applyEach applies objs and returns the keys it wanted and its errors: errs hold back
// the prune, going do not. A namespace being deleted takes everything in it, so a
// refusal there does not hold back the member's prune (a person deleting a namespace
// that holds an import would otherwise stall every unexport in that member until the
// namespace is gone). Into such a namespace (terminating, and any a refusal reveals)
// nothing more is sent: the API server refuses every write there, and passes retried
// every few hundred milliseconds sent hundreds while the MCS conformance suite deleted
// its namespaces. The pass still fails, so it is retried, and the object is written
// once the namespace is gone and made again.
//
// objectsAtOnce of them are applied at a time, so a refusal that reveals a namespace
// being deleted stops what follows it, not the writes already sent with it. The errors
// come sorted, whichever write answered first.
func (w *memberWriter) applyEach(ctx context.Context, objs []client.Object, terminating map[string]bool, res *memberResult) (desired map[objKey]bool, errs, going []error) {
	type item struct {
		k objKey
		o client.Object
	}
	var (
		mu   sync.Mutex // guards terminating, errs, going and res.applied
		wg   sync.WaitGroup
		work = make(chan item)
	)
	for range min(objectsAtOnce, len(objs)) {
		wg.Go(func() {
			for it := range work {
				n, err := w.apply(ctx, it.k, it.o)
				mu.Lock()
				res.applied += n
				switch {
				case err == nil:
				case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
					// Found out by the refusal: looked at again next pass.
					terminating[it.k.namespace] = true
					w.table.setNamespace(it.k.namespace, false)
					going = append(going, err)
				default:
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	desired = map[objKey]bool{}
	for _, o := range objs {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		k := keyOf(kind, o)
		desired[k] = true
		ns := o.GetNamespace()
		mu.Lock()
		gone := terminating[ns]
		if gone {
			going = append(going, fmt.Errorf("%s %s/%s: namespace %s is being deleted", kind, ns, o.GetName(), ns))
		}
		mu.Unlock()
		if !gone {
			work <- item{k: k, o: o}
		}
	}
	close(work)
	wg.Wait()
	sortErrors(errs)
	sortErrors(going)
	return desired, errs, going
}

// objectsAtOnce is how many of a member's objects applyEach writes at a time. A new
// export is four or five writes in every member (its ServiceImport and status, the
// derived Service, its EndpointSlice), one after another they were a member's latency
// each: at 255 members, 32 at a time, eight waves of five.
const objectsAtOnce = 4

// sortErrors orders errors by their text.
func sortErrors(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// summarize keeps the first few errors of a member, so that a member refusing every
// write gives a readable condition and event, not thousands of lines.
func summarize(errs []error) error {
	const keep = 3
	if len(errs) > keep {
		errs = append(errs[:keep:keep], fmt.Errorf("and %d more errors", len(errs)-keep))
	}
	return errors.Join(errs...)
}

// checkOwner refuses to write into a member that belongs to another ClusterSet.
func (w *memberWriter) checkOwner(ctx context.Context) error {
	return CheckMembershipOwner(ctx, w.m.Reader, w.cs)
}

// CheckMembershipOwner refuses a member whose Membership belongs to another ClusterSet
// than cs: a cluster has one Membership, and two ClusterSets would overwrite each
// other's forever. The hub writes nothing there, and `strait diff` says so.
func CheckMembershipOwner(ctx context.Context, rd client.Reader, cs types.NamespacedName) error {
	m := &straitv1.Membership{}
	err := rd.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the membership: %w", err)
	}
	if owner := m.Labels[straitv1.LabelClusterSet]; owner != "" && owner != plan.ClusterSetLabel(cs) {
		return fmt.Errorf("the cluster is a member of ClusterSet %s (its Membership says so); remove it there first", m.Spec.ClusterSet)
	}
	return nil
}

// ensureNamespaces creates the namespaces the objects live in when the member lacks
// them (an import's namespace need not exist where it is imported), and says which are
// being deleted (applyEach writes nothing there). They are never deleted: people's
// objects may live there too.
func (w *memberWriter) ensureNamespaces(ctx context.Context, objs []client.Object) (terminating map[string]bool, _ error) {
	seen := map[string]bool{}
	terminating = map[string]bool{}
	var errs []error
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || seen[ns] || w.table.hasNamespace(ns) {
			continue
		}
		seen[ns] = true
		got := &corev1.Namespace{}
		err := w.m.Client.Get(ctx, types.NamespacedName{Name: ns}, got)
		if err == nil && got.DeletionTimestamp != nil {
			terminating[ns] = true
			continue
		}
		if apierrors.IsNotFound(err) {
			err = w.m.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub}}})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
			continue
		}
		w.table.setNamespace(ns, true)
	}
	return terminating, errors.Join(errs...)
}

// apply server-side applies one object (and the status of a ServiceImport), unless the
// member still holds exactly what the hub last wrote. It returns how many writes it did.
// The object is encoded once: its hash decides, and only a write decodes it again.
func (w *memberWriter) apply(ctx context.Context, k objKey, o client.Object) (int, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return 0, err
	}
	hash := hashOf(data)
	switch e, ok := w.table.get(k); {
	case ok && e.hash == hash:
		if w.trusts(k.kind) {
			return 0, nil
		}
		if cur := w.current(ctx, k, o); cur != nil && e.holds(k.kind, cur) {
			return 0, nil
		}
	case !ok && !w.trusts(k.kind):
		// No record: a new object, or a hub that started over members in place.
		if cur := w.current(ctx, k, o); cur != nil && adoptable(cur, o, hash) {
			w.table.set(k, entryOf(k.kind, cur, cur.GetResourceVersion(), hash))
			return 0, nil
		}
	}
	body, status, err := applyBody(data, o)
	if err != nil {
		return 0, err
	}
	writes := 0
	opts := []client.ApplyOption{client.FieldOwner(straitv1.FieldManager), client.ForceOwnership}
	// Recorded first: the informer may hand the write's echo on before the write
	// returns.
	undo := w.table.expect(k, hash)
	if err := w.m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(body), opts...); err != nil {
		undo()
		if apierrors.IsNotFound(err) {
			w.table.setNamespace(k.namespace, false)
		}
		return 0, fmt.Errorf("applying %s %s/%s: %w", k.kind, k.namespace, k.name, err)
	}
	writes++
	w.table.wrote(time.Now())
	rv := body.GetResourceVersion()
	if status != nil {
		// The apply's answer is the object as the member holds it, status included.
		StampConditions(status, answeredConditions(body), time.Now())
		st := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": body.GetAPIVersion(), "kind": body.GetKind(),
			"metadata": map[string]any{"name": k.name, "namespace": k.namespace},
			"status":   status,
		}}
		if err := w.m.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(straitv1.FieldManager), client.ForceOwnership); err != nil {
			return writes, fmt.Errorf("applying the status of %s %s/%s: %w", k.kind, k.namespace, k.name, err)
		}
		writes++
		w.table.wrote(time.Now())
		rv = st.GetResourceVersion()
	}
	w.table.set(k, entryOf(k.kind, body, rv, hash))
	return writes, nil
}

// StampConditions fills in the lastTransitionTime of the conditions in a ServiceImport's
// status (the plan, being pure, leaves it out): that of the condition held, when its
// status did not change, else now. strait diff stamps its merged view the same way.
func StampConditions(status map[string]any, held []metav1.Condition, now time.Time) {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		at := metav1.NewTime(now)
		typ, _ := m["type"].(string)
		if h := apimeta.FindStatusCondition(held, typ); h != nil && string(h.Status) == m["status"] && !h.LastTransitionTime.IsZero() {
			at = h.LastTransitionTime
		}
		m["lastTransitionTime"] = at.UTC().Format(time.RFC3339)
	}
}

// answeredConditions are the status conditions of the object a member answered an
// apply with (nil: none, or none readable).
func answeredConditions(u *unstructured.Unstructured) []metav1.Condition {
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return nil
	}
	var out []metav1.Condition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		var cond metav1.Condition
		if !ok || runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) != nil {
			return nil
		}
		out = append(out, cond)
	}
	return out
}

// current is the object as the member holds it, nil when unknown (then the object is
// written): from the informers for the kinds the hub watches; for the others from the
// full pass's listing (held), else from the member's API server.
func (w *memberWriter) current(ctx context.Context, k objKey, o client.Object) client.Object {
	if k.kind == "Secret" {
		return nil // Secrets are not watched: the PSK is written every time
	}
	if memberprint.Reported(k.kind) && w.held != nil {
		return w.held[k]
	}
	// An empty object of o's type for the informer to fill: a copy of o would be thrown
	// away (a new member's first pass asks for each of its tens of thousands of objects).
	cur, ok := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if !ok {
		return nil
	}
	if err := w.reader(k.kind).Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, cur); err != nil {
		return nil
	}
	return w.asInformers(k.kind, cur)
}

// ApplyBody turns a typed object into the body of the hub's apply: no status, no null
// creationTimestamp. The status of a ServiceImport, a subresource, is returned apart.
// strait diff builds its dry runs with it, so they are what the hub writes.
func ApplyBody(o client.Object) (*unstructured.Unstructured, map[string]any, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, nil, err
	}
	return applyBody(data, o)
}

// applyBody is ApplyBody of an object already encoded as data: the hub encodes each
// object once, for its hash, and decodes it only when it writes.
func applyBody(data []byte, o client.Object) (*unstructured.Unstructured, map[string]any, error) {
	m, err := applyMap(data)
	if err != nil {
		return nil, nil, err
	}
	var status map[string]any
	if st, ok := m["status"].(map[string]any); ok && len(st) > 0 {
		if _, isImport := o.(*mcsv1.ServiceImport); isImport {
			status = st
		}
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	// Not on a Secret: the digest of a key is no business of anyone who may read the
	// Secret's metadata, and the hub writes the PSK Secret at every pass anyway.
	if _, secret := o.(*corev1.Secret); !secret {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[straitv1.AnnotationDigest] = digestOf(hashOf(data))
		u.SetAnnotations(ann)
	}
	return u, status, nil
}

// digestOf is the value of the digest annotation for an object whose content hashes to
// hash.
func digestOf(hash uint64) string { return memberprint.FormatDigest(hash) }

// applyMap decodes an encoded object into the map an apply sends, without the
// creationTimestamp the API server sets.
func applyMap(data []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return m, nil
}

// exportConditions writes Valid/Ready/Conflict into the ServiceExports that count, the
// hub's and people's, keeping lastTransitionTime when a condition did not change.
func (w *memberWriter) exportConditions(ctx context.Context, want map[types.NamespacedName][]metav1.Condition) []error {
	keys := make([]types.NamespacedName, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var errs []error
	for _, k := range keys {
		se := &mcsv1.ServiceExport{}
		if err := w.m.Reader.Get(ctx, k, se); err != nil {
			if err = w.m.Client.Get(ctx, k, se); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("reading ServiceExport %s: %w", k, err))
				}
				continue
			}
		}
		conds := append([]metav1.Condition(nil), se.Status.Conditions...)
		changed := false
		for _, c := range want[k] {
			c.ObservedGeneration = se.Generation
			if cur := apimeta.FindStatusCondition(conds, c.Type); cur != nil && cur.Status == c.Status &&
				cur.Reason == c.Reason && cur.Message == c.Message && cur.ObservedGeneration == c.ObservedGeneration {
				continue
			}
			apimeta.SetStatusCondition(&conds, c)
			changed = true
		}
		if !changed {
			continue
		}
		st := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": mcsv1.GroupVersion.String(), "kind": "ServiceExport",
			"metadata": map[string]any{"name": k.Name, "namespace": k.Namespace},
			"status":   map[string]any{"conditions": conditionsToMaps(conds, want[k])},
		}}
		if err := w.m.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(straitv1.FieldManager), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("writing the conditions of ServiceExport %s: %w", k, err))
			continue
		}
		w.table.setRV(objKey{kind: "ServiceExport", namespace: k.Namespace, name: k.Name}, st.GetResourceVersion())
	}
	return errs
}

// conditionsToMaps keeps the condition types the hub owns, for an apply of the status.
func conditionsToMaps(conds, owned []metav1.Condition) []any {
	types := map[string]bool{}
	for _, c := range owned {
		types[c.Type] = true
	}
	var out []any
	for _, c := range conds {
		if !types[c.Type] {
			continue
		}
		data, _ := json.Marshal(c)
		m := map[string]any{}
		_ = json.Unmarshal(data, &m)
		out = append(out, m)
	}
	return out
}

// reader is where the member's objects of kind are read: the informers for the kinds
// the hub watches, the member's API server for the others (memberprint.Reported).
func (w *memberWriter) reader(kind string) client.Reader {
	if memberprint.Reported(kind) {
		return w.m.Client
	}
	return w.m.Reader
}

// asInformers is o, of kind, as the informers would hold it: an object read from the
// API server keeps only other managers' entries of its managed fields, as the
// informers' transform does (members.KeepOthersManagers), so that adoption reads both
// alike.
func (w *memberWriter) asInformers(kind string, o client.Object) client.Object {
	if memberprint.Reported(kind) {
		_, _ = members.KeepOthersManagers(straitv1.FieldManager)(o)
	}
	return o
}
