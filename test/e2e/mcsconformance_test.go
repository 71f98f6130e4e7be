package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// specsRan is the suite's summary line: "Ran 27 of 27 Specs in 195.771 seconds".
var specsRan = regexp.MustCompile(`Ran (\d+) of (\d+) Specs in [0-9.]+ seconds`)

// TestMCSConformance runs the Multi-Cluster Services API's own conformance suite, every
// spec, against this lab (hack/mcs-conformance.sh with STRAIT_LAB_STATE): for the run
// the ClusterSet honours the members' ServiceExports (exportPolicy: MemberExports, as
// test/conformance's ClusterSet has it; the suite exports its own services in namespaces
// of its own), the suite's images are loaded into the nodes as a user loads them, and
// the suite must run every spec and pass. A lab of its own cost a minute more;
// `make mcs-conformance` still brings one up, for the report kept in docs/.
func TestMCSConformance(t *testing.T) {
	env.Require(t)
	// Cleanups run last first: the suite's namespaces go, the ClusterSet is put back,
	// then nothing of the suite's may be left in its status for the tests after.
	t.Cleanup(func() { suiteExportsGone(t) })
	env.RestoreClusterSetSpec(t)
	t.Cleanup(func() { deleteSuiteNamespaces(t) })
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports
	}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRAIT_LAB_STATE", env.Lab.State().Dir)
	t.Setenv("STRAIT", env.Strait)
	t.Setenv("KUBECTL", filepath.Join(env.K8sBin, "kubectl"))
	t.Setenv("MCS_CONFORMANCE_REPORT", filepath.Join(env.Root, "bin", "mcs-conformance", "report"))
	var args []string
	if dir := os.Getenv("MCS_CONFORMANCE"); dir != "" {
		args = append(args, dir)
	}
	start := time.Now()
	out, errOut, code := labtest.Run(t, 20*time.Minute, filepath.Join(env.Root, "hack", "mcs-conformance.sh"), args...)
	if strings.Contains(errOut, "mcs-conformance: no suite") {
		require.Skip(t, "the MCS conformance suite's source is not here: %s", strings.TrimSpace(errOut))
	}
	m := specsRan.FindStringSubmatch(out)
	t.Logf("hack/mcs-conformance.sh in this lab: exit %d in %s; %s (report in bin/mcs-conformance/report)", code, time.Since(start).Round(time.Second), summary(m))
	if code != 0 || m == nil || m[1] != m[2] {
		var failed []string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "[FAIL]") {
				failed = append(failed, line)
			}
		}
		t.Errorf("the MCS conformance suite: exit %d, %s; want every spec run and passed (its whole output: bin/mcs-conformance/run.log)\n%s\n%s",
			code, summary(m), strings.Join(failed, "\n"), errOut)
	}
}

func summary(m []string) string {
	if m == nil {
		return "no summary line"
	}
	return m[0]
}

// suitePrefix starts the names of the namespaces the suite makes its services in.
const suitePrefix = "mcs-conformance-"

// deleteSuiteNamespaces deletes what the suite left of its namespaces in the members and
// waits until they are gone. Their pods go at once, without their 30 s of grace (the
// suite's servers do not stop on SIGTERM): the wait took a minute with it.
func deleteSuiteNamespaces(t *testing.T) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("the suite's namespaces gone in %.1fs", time.Since(start).Seconds()) }()
	var wg sync.WaitGroup
	for _, c := range members() {
		cs := env.HostClient(t, c)
		wg.Go(func() { namespacesGone(t, c, cs) })
	}
	wg.Wait()
}

// namespacesGone deletes the suite's namespaces in one member and waits until they are
// gone; it runs beside the other member's, so it reports rather than stops the test.
func namespacesGone(t *testing.T, c string, cs kubernetes.Interface) {
	t.Helper()
	if _, err := require.Within(3*time.Minute, func() error {
		nss, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var left []string
		for _, ns := range nss.Items {
			if !strings.HasPrefix(ns.Name, suitePrefix) {
				continue
			}
			left = append(left, ns.Name)
			now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
			if err := cs.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(), now, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if ns.DeletionTimestamp == nil {
				if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		return nil
	}); err != nil {
		t.Errorf("%s: the suite's namespaces gone: %v", c, err)
	}
}

// suiteExportsGone waits until the ClusterSet's status lists no export of the suite's.
func suiteExportsGone(t *testing.T) {
	t.Helper()
	took := require.Eventually(t, labtest.Converge, "no export of the suite's in the ClusterSet's status", func() error {
		var left []string
		for _, e := range env.ClusterSet(t).Status.Exports {
			if strings.HasPrefix(e.Namespace, suitePrefix) {
				left = append(left, e.Namespace+"/"+e.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		return nil
	})
	t.Logf("no export of the suite's left in the ClusterSet's status after %.1fs more", took.Seconds())
}
