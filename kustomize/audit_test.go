package kustomize

import (
	"os"
	"slices"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/rbacaudit"
	"github.com/straitnet/strait/test/require"
)

// rarelyUsed are the grants no e2e lab exercises and that stay, each with the code path
// that needs it. Keep it short: a grant that is neither used nor here fails
// TestRolesGrantOnlyWhatTheLabsUsed, and so does an entry here that the labs do use.
var rarelyUsed = []rbacaudit.Allowance{
	{User: sa("strait-hub"), Grant: "update secrets strait-hub-webhook-cert -n strait-system",
		Why: "the certificate rotator renews the webhook's certificate in place (webhook/certs.go, an update with resourceVersion) when it nears expiry, long after a lab ends; TestCertificatesAreInjectedAndRotated renews it against an API server"},
}

// installedGrants are the grants of the overlays the labs install: kustomize/hub on the
// hub, kustomize/member on every member. kustomize/default is their union with the hub's
// ServiceAccount added to the member access bindings (TestDefaultManifests).
func installedGrants(t *testing.T) []rbacaudit.Grant {
	t.Helper()
	grants, err := rbacaudit.Grants(append(build(t, "hub"), build(t, "member")...))
	if err != nil {
		t.Fatal(err)
	}
	return grants
}

func sa(name string) string { return rbacaudit.ServiceAccount(straitv1.SystemNamespace, name) }

// TestRolesGrantOnlyWhatTheLabsUsed holds Strait's roles to what its daemons did in every
// lab of the e2e suites, as their API servers' audit logs recorded it (make test runs it
// after them, with $STRAIT_RBAC_USAGE): no request of theirs was refused, and every
// grant was used by some request, or is in rarelyUsed with the reason.
func TestRolesGrantOnlyWhatTheLabsUsed(t *testing.T) {
	dir := os.Getenv(labtest.UsageDirEnv)
	if dir == "" {
		// Not require.Skip: under CI make test runs this again with the directory set,
		// after the suites that fill it.
		t.Skipf("needs $%s, the usage the e2e suites recorded (make test sets it)", labtest.UsageDirEnv)
	}
	u, err := rbacaudit.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Suites) == 0 {
		require.Skip(t, "no e2e suite recorded usage in %s (their labs need root)", dir)
	}
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := labtest.Suites(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range want {
		if !slices.Contains(u.Suites, s) {
			t.Errorf("the suite %s recorded no usage in %s: the union would miss what its labs did", s, dir)
		}
	}
	report := rbacaudit.Check(u, installedGrants(t), rarelyUsed)
	t.Logf("suites %v: %d distinct requests of ServiceAccounts\n%s", u.Suites, len(u.Used), report)
	if report.Failed() {
		t.Error("the roles do not match what the daemons did (above)")
	}
}

// Every allowance names a grant of the installed roles and says why.
func TestEveryRarelyUsedGrantExists(t *testing.T) {
	report := rbacaudit.Check(&rbacaudit.Usage{}, installedGrants(t), rarelyUsed)
	for _, s := range report.Stale {
		t.Error(s)
	}
	for _, a := range rarelyUsed {
		if len(a.Why) < 20 {
			t.Errorf("%s %q: say why it stays", a.User, a.Grant)
		}
	}
}
