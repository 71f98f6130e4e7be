package apiserver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/straitnet/strait/test/clusters"
)

// Run starts an API server, runs the tests of m with its config, stops it and exits.
// Without the test binaries the tests are skipped, unless CI is set: then they fail.
func Run(m *testing.M, run func(cfg *rest.Config) int) {
	os.Exit(run1(m, run, false))
}

// RunOptional is Run for a package that also has tests needing no API server: without
// the test binaries (and CI unset) it runs them all with a nil config, and the tests
// that need one skip themselves (see Need).
func RunOptional(m *testing.M, run func(cfg *rest.Config) int) {
	os.Exit(run1(m, run, true))
}

// Need skips t when the package's tests run without an API server (cfg is nil).
func Need(t testing.TB, cfg *rest.Config) {
	t.Helper()
	if cfg == nil {
		t.Skip("no kube-apiserver test binaries (run make k8s-binaries)")
	}
}

func run1(m *testing.M, run func(cfg *rest.Config) int, optional bool) int {
	root, err := clusters.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets := clusters.Assets(root)
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			if os.Getenv("CI") != "" {
				fmt.Fprintf(os.Stderr, "FAIL: test binary %s missing in %s (run make k8s-binaries)\n", b, assets)
				return 1
			}
			fmt.Fprintf(os.Stderr, "SKIP: test binary %s missing in %s (run make k8s-binaries)\n", b, assets)
			if optional {
				return run(nil)
			}
			return 0
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths: []string{
			filepath.Join(root, "kustomize", "crd", "bases"),
			filepath.Join(root, "kustomize", "crd", "mcs"),
		},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	code := run(cfg)
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
