package controllers_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// A namespace being deleted in an importing member (where the API server refuses to
// create anything) does not hold back the member's prunes: an export removed elsewhere
// leaves that member within seconds. The MCS conformance suite deletes each spec's
// namespace while the next spec unexports.
func TestTerminatingNamespaceDoesNotHoldBackPrunes(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "going", "a", "10.0.0.71", "10.1.0.71")
	serveService(t, f.env.Member("c1"), "stays", "b", "10.0.0.72", "10.1.0.72")
	// envtest runs no namespace controller: c2's "going" stays Terminating.
	c2 := f.env.Member("c2").Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going"}}
	g.Expect(c2.Create(ctx, ns)).To(Succeed())
	g.Expect(c2.Delete(ctx, ns)).To(Succeed())
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "going", Name: "a", Clusters: []string{"c1"}},
		{Namespace: "stays", Name: "b", Clusters: []string{"c1"}}}
	f.create(t, cs)
	b := types.NamespacedName{Namespace: "stays", Name: "b"}
	g.Eventually(func() error { return c2.Get(ctx, b, &mcsv1.ServiceImport{}) }, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	// The hub fails its passes over c2 (going/a cannot be written) and retries them, but
	// sends nothing into the namespace being deleted: every such write is refused, and
	// retried passes sent hundreds in a lab (the API servers' audit counted them).
	time.Sleep(2 * time.Second)
	g.Expect(refusedWrites(t, f.env.Member("c2").Config)).To(BeZero(), "writes c2's API server refused (into the terminating namespace going)")

	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Exports = c.Spec.Exports[:1] })
	start := time.Now()
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c2.Get(ctx, b, &mcsv1.ServiceImport{}))
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "c2's import of stays/b is still there: the terminating namespace held back the prune")
	t.Logf("stays/b unexported → gone from c2 in %s, while c2's namespace going is terminating", time.Since(start).Round(time.Millisecond))
}

// refusedWrites is how many writes cfg's API server refused with 403, by its own
// apiserver_request_total: in envtest, whose clients are administrators, that is the
// NamespaceLifecycle admission refusing to create in a namespace being deleted.
func refusedWrites(t *testing.T, cfg *rest.Config) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `code="403"`) {
			continue
		}
		if !strings.Contains(line, `verb="APPLY"`) && !strings.Contains(line, `verb="PATCH"`) && !strings.Contains(line, `verb="POST"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += int(v)
	}
	return n
}
