package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Two runs at once (diagnose and verify, or two people on call) each make and keep
// their own probe pods; a run removes only another run's pods old enough to be a killed
// run's leftovers.
func TestConcurrentRunsKeepTheirOwnProbePods(t *testing.T) {
	l := newFakeLab(t, "")
	m := l.members[0]
	ctx := context.Background()
	pods := m.kube.CoreV1().Pods(straitv1.SystemNamespace)
	leftover := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "strait-diagnose-old-c1-node", Namespace: straitv1.SystemNamespace,
		Labels:            map[string]string{probeLabel: "true", "run": "old"},
		CreationTimestamp: metav1.NewTime(time.Now().Add(-staleProbes - time.Minute))}}
	if _, err := pods.Create(ctx, leftover, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.startProbes(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if err := m.startProbes(ctx, "second"); err != nil {
		t.Fatalf("a second run beside the first: %v", err)
	}
	for _, run := range []string{"first", "second"} {
		got, err := m.waitProbes(ctx, run)
		if err != nil || len(got) != len(m.nodes) {
			t.Errorf("run %s: %d probe pods running (%v), want one on each of the %d nodes", run, len(got), err, len(m.nodes))
		}
		for _, p := range got {
			if !strings.HasPrefix(p.name, "strait-diagnose-"+run+"-") {
				t.Errorf("run %s's probe pod is named %s", run, p.name)
			}
		}
	}
	if _, err := pods.Get(ctx, leftover.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("a killed run's probe pod %s, %s old, is still there", leftover.Name, staleProbes+time.Minute)
	}
}

func TestProbePodNamesFitAnObjectName(t *testing.T) {
	if got := probePodName("lx3k9", "c1-node-1"); got != "strait-diagnose-lx3k9-c1-node-1" {
		t.Errorf("probePodName = %q", got)
	}
	long := strings.Repeat("n", 240) + ".example.com"
	a, b := probePodName("lx3k9", long), probePodName("lx3k9", long+"x")
	for _, n := range []string{a, b} {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("%q: %v", n, errs)
		}
	}
	if a == b {
		t.Errorf("two long node names gave one pod name %q", a)
	}
}
