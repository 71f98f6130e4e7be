package netns_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// inPrivateMounts is set in the copy of the test binary that runs in a mount namespace
// of its own, on a /run of its own.
const inPrivateMounts = "STRAIT_TEST_PRIVATE_MOUNTS"

// TestPrepareRunDirOnAFreshHost: on a host where /run/netns is not a mount point yet
// (just booted), eight concurrent PrepareRunDir calls make it exactly one shared mount
// point, so ip(8) never stacks another layer over namespaces already mounted there. It
// runs in a private mount namespace on a fresh /run: the host's mounts are not touched.
func TestPrepareRunDirOnAFreshHost(t *testing.T) {
	if os.Getenv(inPrivateMounts) == "" {
		require.Root(t, "unshare", "mount", "umount")
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
		cmd.Env = append(os.Environ(), inPrivateMounts+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a private mount namespace: %v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	// Only in this mount namespace: the host's /run/netns stays as it is.
	for len(runDirMounts(t)) > 0 {
		if out, err := exec.Command("umount", "--lazy", "/run/netns").CombinedOutput(); err != nil {
			t.Fatalf("umount /run/netns here: %v: %s", err, out)
		}
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "strait-test-run", "/run").CombinedOutput(); err != nil {
		t.Fatalf("mount a fresh /run: %v: %s", err, out)
	}
	if n := runDirMounts(t); len(n) != 0 {
		t.Fatalf("a fresh /run has %s mounted already: %v", netns.RunDir, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- netns.PrepareRunDir() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := netns.PrepareRunDir(); err != nil {
		t.Fatal(err)
	}
	got := runDirMounts(t)
	if len(got) != 1 || !strings.Contains(got[0], "shared:") {
		t.Fatalf("want one shared mount on /run/netns, got %d: %q", len(got), got)
	}
}

// runDirMounts are the optional fields of every mount on /run/netns.
func runDirMounts(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 6 && fields[4] == "/run/netns" {
			found = append(found, strings.Join(fields[6:], " "))
		}
	}
	return found
}
