package clusters

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/straitnet/strait/test/require"
)

// StartCluster starts one control plane with Strait's and the MCS CRDs and nothing else
// in it (not even strait-system: the test makes what a user would); its KubeConfig is an
// administrator's. The caller stops it.
func StartCluster(name string) (_ *Cluster, retErr error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if lacks := Lacks(root); lacks != "" {
		return nil, errors.New(lacks)
	}
	c := &Cluster{Name: name}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, c.Stop())
		}
	}()
	if err := c.start(root, NewScheme()); err != nil {
		return nil, err
	}
	admin, err := c.env.AddUser(envtest.User{Name: name + "-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s kubeconfig: %w", name, err)
	}
	if c.KubeConfig, err = admin.KubeConfig(); err != nil {
		return nil, fmt.Errorf("%s kubeconfig: %w", name, err)
	}
	return c, nil
}

// NewCluster is StartCluster for one test, stopped when t ends. It skips under -short,
// and without the binaries it skips, or fails when CI is set.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kube-apiserver; not a -short test")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if lacks := Lacks(root); lacks != "" {
		require.Skip(t, "%s", lacks)
	}
	c, err := StartCluster("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// TestMain, called from a package's TestMain, starts one cluster (StartCluster) for
// all its tests, runs them through run (which calls m.Run), stops the cluster and exits. Without the binaries the package skips, or
// fails when CI is set.
func TestMain(run func(*Cluster) int) {
	os.Exit(testMain(run))
}

func testMain(run func(*Cluster) int) int {
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if lacks := Lacks(root); lacks != "" {
		return require.MainSkip("%s", lacks)
	}
	c, err := StartCluster("test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := run(c)
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
