package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/plan"
)

// memMember stands in for a member's API server and informers in the scale benchmark,
// where 255 members holding 20,000 objects each cannot run on one machine. It keeps,
// per object the hub wrote, its resourceVersion and digest annotation (and a
// ServiceExport's or ServiceImport's status), and counts writes. It answers the calls the hub's write path makes; any other call panics
// through the nil embedded interfaces. Reads hand out fresh objects like an informer's
// deep copy, but smaller: metadata only. Every change, the hub's writes and deletes and
// those made behind its back (touch, remove), is handed to the member's print handlers
// (members.Prints) as the informer fed by its API server would hand on the watch event,
// with an object of the same metadata as reads give. The correctness tests use real
// API servers.
type memMember struct {
	client.Client // nil: calls the write path does not make panic
	scheme        *runtime.Scheme

	mu      sync.Mutex
	rv      int64
	objs    map[string]map[objKey]memObj // kind -> object
	exports map[objKey]map[string]any    // ServiceExport -> status
	// statuses are the ServiceImport statuses written, shared by the stand-ins of one
	// hub.
	statuses *importStatuses
	writes   int
	// labels are those of the hub's objects (all of them carry the same), given back on
	// reads so that prune by name recognizes them.
	labels map[string]string
	// prints are the hub's member informers' prints, of the kinds a real hub watches;
	// reports are what strait dns keeps in the member for its report, of the kinds the
	// hub does not watch (memberprint.Reported). Both are fed by informed. They are
	// apart so that the hub's heap is measured without the member's (BenchmarkHubScale's
	// hub-heap): a real hub holds no object of the reported kinds.
	prints, reports *members.Prints
	// reported is the Membership's status.prints as strait dns last wrote it, made
	// from reports when it is read (nil: to be made).
	reported []straitv1.MemberPrint
}

// newMemMember is a member whose prints fingerprint with the hub's function for key,
// keeping the ServiceImport statuses written in statuses (shared by a hub's stand-ins).
func newMemMember(key members.Key, statuses *importStatuses) *memMember {
	var watched []string
	for _, pk := range prunable() {
		if !memberprint.Reported(pk.kind) {
			watched = append(watched, pk.kind)
		}
	}
	return &memMember{scheme: scheme.New(), objs: map[string]map[objKey]memObj{}, exports: map[objKey]map[string]any{},
		statuses: statuses, prints: members.NewPrints(memberPrints(key), watched...),
		reports: members.NewPrints(memberPrints(key), memberprint.ReportedKinds()...)}
}

// memObj is what a stand-in keeps of an object, in 16 bytes (40 million of them at
// 1,000 members): its resourceVersion, the digest the hub's annotation carried (0:
// none), and a ServiceImport's status (an index into statusList, from 1; 0: none).
type memObj struct {
	digest uint64
	rv     uint32
	status uint32
}

// informed hands a change of an object to its kind's print handler, as the informer
// would: from was (rv 0: it did not exist) to is (rv 0: deleted), each with the digest
// the hub's annotation carried. m.mu is held.
func (m *memMember) informed(k objKey, was, is memObj) {
	prints := m.prints
	if memberprint.Reported(k.kind) {
		prints = m.reports
		m.reported = nil // strait dns writes its report anew
	}
	h := prints.Handler(k.kind)
	if h == nil {
		return
	}
	obj := func(mo memObj) client.Object {
		o := &metav1.PartialObjectMetadata{}
		m.fill(o, k, mo)
		return o
	}
	switch {
	case was.rv == 0 && is.rv != 0:
		h.OnAdd(obj(is), false)
	case is.rv != 0:
		h.OnUpdate(obj(was), obj(is))
	case was.rv != 0:
		h.OnDelete(obj(was))
	}
}

// fill gives o the name, resourceVersion, labels and digest annotation of a stand-in's
// object, and a ServiceImport its status, as the member's API server would answer it.
func (m *memMember) fill(o client.Object, k objKey, mo memObj) {
	o.SetName(k.name)
	o.SetNamespace(k.namespace)
	o.SetResourceVersion(strconv.FormatInt(int64(mo.rv), 10))
	o.SetLabels(m.labels)
	if mo.digest != 0 {
		o.SetAnnotations(map[string]string{straitv1.AnnotationDigest: digestOf(mo.digest)})
	}
	if si, ok := o.(*mcsv1.ServiceImport); ok && mo.status != 0 {
		si.Status = m.statuses.get(mo.status) // a List's items too: a new hub adopts from them
	}
}

func (m *memMember) Scheme() *runtime.Scheme { return m.scheme }

// report is the Membership's status.prints as strait dns would write it, without its
// delay: the member's prints of the kinds the hub does not watch. Every read shares
// it, as the hub's reads from its informers' cache do (client.UnsafeDisableDeepCopy).
// m.mu is held.
func (m *memMember) report() []straitv1.MemberPrint {
	if m.reported != nil {
		return m.reported
	}
	for _, kind := range memberprint.ReportedKinds() {
		p, _ := m.reports.Print(kind)
		m.reported = append(m.reported, straitv1.MemberPrint{ClusterSet: m.labels[straitv1.LabelClusterSet], Kind: kind,
			Count: int32(p.N), Sum: memberprint.FormatSum(p.Sum)})
	}
	return m.reported
}

func (m *memMember) Get(_ context.Context, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if _, ok := obj.(*corev1.Namespace); ok {
		return nil // every namespace exists
	}
	kind := kindOf(obj)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := objKey{kind: kind, namespace: k.Namespace, name: k.Name}
	mo, ok := m.objs[kind][key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: kind}, k.Name)
	}
	m.fill(obj, key, mo)
	if ms, ok := obj.(*straitv1.Membership); ok {
		ms.Status.Prints = m.report()
	}
	if se, ok := obj.(*mcsv1.ServiceExport); ok && m.exports[key] != nil {
		st := &mcsv1.ServiceExportStatus{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.exports[key], st); err != nil {
			return err
		}
		se.Status = *st
	}
	return nil
}

func (m *memMember) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	item, err := itemOf(m.scheme, list)
	if err != nil {
		return err
	}
	kind := kindOf(item)
	m.mu.Lock()
	var items []runtime.Object
	// An MCS slice is named after its service ("<service>-<cluster>", plan.SliceName),
	// a derived Service's slice after that Service ("<derived>-<cluster>"): enough to
	// select by the service-name or service-import label without keeping labels per
	// object. (Ignoring the second one once listed a namespace's every slice, and the
	// hub's prune of one export took its neighbours' slices with it.)
	var service string
	if lo.LabelSelector != nil {
		if v, ok := lo.LabelSelector.RequiresExactMatch(mcsv1.LabelServiceName); ok {
			service = v + "-"
		} else if v, ok := lo.LabelSelector.RequiresExactMatch(straitv1.LabelServiceImport); ok {
			service = plan.DerivedServiceName(v) + "-"
		}
	}
	for k, mo := range m.objs[kind] {
		if lo.Namespace != "" && k.namespace != lo.Namespace || !strings.HasPrefix(k.name, service) {
			continue
		}
		o, _ := item.DeepCopyObject().(client.Object)
		m.fill(o, k, mo)
		items = append(items, o)
	}
	m.mu.Unlock()
	return apimeta.SetList(list, items)
}

// itemOf is an empty item of a typed list.
func itemOf(scheme *runtime.Scheme, list client.ObjectList) (client.Object, error) {
	switch list.(type) {
	case *mcsv1.ServiceImportList:
		return &mcsv1.ServiceImport{}, nil
	case *mcsv1.ServiceExportList:
		return &mcsv1.ServiceExport{}, nil
	}
	gvk, err := apiutilGVK(scheme, list)
	if err != nil {
		return nil, err
	}
	o, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind[:len(gvk.Kind)-len("List")]))
	if err != nil {
		return nil, err
	}
	co, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is no object", o)
	}
	return co, nil
}

func apiutilGVK(scheme *runtime.Scheme, list client.ObjectList) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(list)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", list, err)
	}
	return gvks[0], nil
}

func (m *memMember) Create(context.Context, client.Object, ...client.CreateOption) error { return nil }

func (m *memMember) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	kind := kindOf(obj)
	k := objKey{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}
	if mo, ok := m.objs[kind][k]; ok {
		delete(m.objs[kind], k)
		m.informed(k, mo, memObj{})
	}
	m.writes++
	return nil
}

// unstructuredApply is what client.ApplyConfigurationFromUnstructured hands over.
type unstructuredApply interface {
	GetKind() string
	GetName() string
	GetNamespace() string
	SetResourceVersion(string)
	UnstructuredContent() map[string]any
}

func (m *memMember) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	return m.store(obj, false)
}

func (m *memMember) store(obj runtime.ApplyConfiguration, status bool) error {
	u, ok := obj.(unstructuredApply)
	if !ok {
		return fmt.Errorf("apply of %T", obj)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if md, ok := u.UnstructuredContent()["metadata"].(map[string]any); ok && m.labels == nil {
		if l, ok := md["labels"].(map[string]any); ok {
			m.labels = map[string]string{}
			for _, k := range []string{straitv1.LabelManagedBy, straitv1.LabelClusterSet} {
				m.labels[k], _ = l[k].(string)
			}
		}
	}
	kind := u.GetKind()
	k := objKey{kind: kind, namespace: u.GetNamespace(), name: u.GetName()}
	if m.objs[kind] == nil {
		m.objs[kind] = map[objKey]memObj{}
	}
	m.rv++
	mo := m.objs[kind][k]
	was := mo
	mo.rv = uint32(m.rv)
	st, _ := u.UnstructuredContent()["status"].(map[string]any)
	switch {
	case !status:
		mo.digest = 0
		if md, ok := u.UnstructuredContent()["metadata"].(map[string]any); ok {
			ann, _ := md["annotations"].(map[string]any)
			d, _ := ann[straitv1.AnnotationDigest].(string)
			mo.digest, _ = strconv.ParseUint(d, 16, 64)
		}
	case kind == "ServiceExport":
		m.exports[k] = runtime.DeepCopyJSON(st)
	case kind == "ServiceImport":
		var err error
		if mo.status, err = m.importStatus(st); err != nil {
			return err
		}
	}
	m.objs[kind][k] = mo
	m.informed(k, was, mo)
	u.SetResourceVersion(strconv.FormatInt(m.rv, 10))
	m.writes++
	return nil
}

func (m *memMember) Status() client.SubResourceWriter { return memStatus{m: m} }

// touch changes an object behind the hub's back, as someone editing it would. The
// informer sees it (the print changes); the hub's watch does not (no ChangeFunc is
// called), as when the hub was down or the change stripped the hub's labels. The
// object's digest is forgotten: a real edit keeps the annotation but adds the editor's
// managed fields entry, which keeps a new hub from adopting it (adoptable) just as well.
func (m *memMember) touch(k objKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rv++
	mo := m.objs[k.kind][k]
	was := mo
	mo.rv, mo.digest = uint32(m.rv), 0
	m.objs[k.kind][k] = mo
	m.informed(k, was, mo)
}

// remove deletes an object behind the hub's back: the informer sees it, the hub's
// watch does not (see touch).
func (m *memMember) remove(k objKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mo, ok := m.objs[k.kind][k]; ok {
		delete(m.objs[k.kind], k)
		m.informed(k, mo, memObj{})
	}
}

// importStatus is a ServiceImport status as written, as its index in m.statuses.
func (m *memMember) importStatus(st map[string]any) (uint32, error) {
	return m.statuses.add(st)
}

// importStatuses are the distinct ServiceImport statuses a hub's stand-ins were written,
// without the conditions' times (which the hub does not compare): one per set of
// exporting clusters, where one per import (a time each) in every stand-in took
// gigabytes at 1,000 members.
type importStatuses struct {
	mu    sync.Mutex
	index map[string]uint32 // by encoding, into list (from 1)
	list  []*mcsv1.ServiceImportStatus
}

func newImportStatuses() *importStatuses { return &importStatuses{index: map[string]uint32{}} }

// add keeps a status written (as an apply's unstructured status) and returns its index.
func (s *importStatuses) add(st map[string]any) (uint32, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	is := &mcsv1.ServiceImportStatus{}
	if err := json.Unmarshal(data, is); err != nil {
		return 0, err
	}
	for i := range is.Conditions {
		is.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	if data, err = json.Marshal(is); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[string(data)]; ok {
		return i, nil
	}
	s.list = append(s.list, is)
	s.index[string(data)] = uint32(len(s.list))
	return uint32(len(s.list)), nil
}

// get is the status of index i (from 1).
func (s *importStatuses) get(i uint32) mcsv1.ServiceImportStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.list[i-1]
}

func (m *memMember) writeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

type memStatus struct {
	client.SubResourceWriter
	m *memMember
}

func (s memStatus) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	return s.m.store(obj, true)
}

var _ client.Client = &memMember{}
