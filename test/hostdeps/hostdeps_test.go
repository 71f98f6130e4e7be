package hostdeps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/require"
)

// run runs script (a bash command line) in a private mount namespace where nft is
// hidden under /dev/null, as a new user of a machine without nftables would meet it.
func run(t *testing.T, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hide := `nft=$(command -v nft) && mount --bind /dev/null "$nft"; ` + script
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--", "bash", "-c", hide)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the set-up step hung instead of refusing:\n%s", out)
	}
	return string(out), err
}

// As root on Debian the step installs nftables; when nft is still not there afterwards
// it says so, naming the tool and the package, and fails.
func TestMakeLabSetupRefusesWithoutNft(t *testing.T) {
	require.Root(t, "unshare")
	out, err := run(t, "make --no-print-directory host-deps")
	if err == nil {
		t.Fatalf("make host-deps succeeded without nft:\n%s", out)
	}
	if !strings.Contains(out, "missing: nft (Debian package nftables)") {
		t.Fatalf("the refusal does not name nft and its package:\n%s", out)
	}
	for _, other := range []string{"missing: ip ", "missing: iperf3", "missing: /usr/lib/ipsec/charon"} {
		if strings.Contains(out, other) {
			t.Errorf("names a tool that is there (%q):\n%s", other, out)
		}
	}
}

// Without root nothing can be installed: the step stops at once with the list.
func TestSetupWithoutRootNamesWhatToInstall(t *testing.T) {
	require.Root(t, "unshare")
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "host-deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Where nobody can read it: t.TempDir's parent is private to root.
	dir, err := os.MkdirTemp("", "strait-host-deps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	copied := filepath.Join(dir, "host-deps.sh")
	if err := os.WriteFile(copied, script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "exec setpriv --reuid=65534 --regid=65534 --clear-groups -- bash "+copied)
	if err == nil {
		t.Fatalf("succeeded without nft and without root:\n%s", out)
	}
	if !strings.Contains(out, "needs root on Debian") || !strings.Contains(out, "missing: nft (Debian package nftables)") {
		t.Fatalf("the refusal does not say why or what:\n%s", out)
	}
}
