package labtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/rbacaudit"
)

// UsageDirEnv names the directory where each lab test package leaves what its lab's
// ServiceAccounts did, as SUITE.json: make test sets it for the e2e packages, then
// kustomize's TestRolesGrantOnlyWhatTheLabsUsed holds the roles to the union.
const UsageDirEnv = "STRAIT_RBAC_USAGE"

// IsStrait says whether user is one of Strait's ServiceAccounts.
func IsStrait(user string) bool {
	return strings.HasPrefix(user, rbacaudit.ServiceAccount(straitv1.SystemNamespace, ""))
}

// checkAudit reads the audit logs of the lab's API servers (lab/audit.go records
// Strait's and Flux's ServiceAccounts). Any request RBAC refused, or any 403 of
// Strait's, is an error, unless made in the moments after an uninstall deleted a role
// that could grant it or a reinstall wrote it again (rbacaudit's windows, counted from
// the change), or before a (re)started API server was ready; with UsageDirEnv set, what
// was done is written there for the check across suites.
func checkAudit(l *lab.Lab, suite string) error {
	start := time.Now()
	var us []*rbacaudit.Usage
	var size int64
	logs := l.State().AuditLogs()
	for cluster, path := range logs {
		if fi, err := os.Stat(path); err == nil {
			size += fi.Size()
		}
		starts, err := l.State().APIServerStarts(cluster)
		if err != nil {
			return err
		}
		notReady := make([]rbacaudit.Interval, len(starts))
		for i, s := range starts {
			notReady[i] = rbacaudit.Interval{From: s.Started, To: s.Ready}
		}
		u, err := rbacaudit.ReadFile(path, cluster, notReady)
		if err != nil {
			return err
		}
		us = append(us, u)
	}
	u := rbacaudit.Merge(us...)
	u.Suites = []string{suite}
	excused := map[string]int{}
	for _, r := range u.Refused {
		if r.Excused != "" {
			excused[r.Excused]++
		}
	}
	fmt.Fprintf(os.Stderr, "audit: %d clusters, %.1f MB of log read in %s, %d distinct requests of ServiceAccounts, %d refused; excused: %v\n",
		len(logs), float64(size)/1e6, time.Since(start).Round(time.Millisecond), len(u.Used), len(u.Refused), excused)
	if dir := os.Getenv(UsageDirEnv); dir != "" && len(logs) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := u.WriteFile(filepath.Join(dir, suite+".json")); err != nil {
			return err
		}
	}
	if refused := u.Refusals(IsStrait); len(refused) > 0 {
		lines := make([]string, len(refused))
		for i, r := range refused {
			lines[i] = r.String()
		}
		return fmt.Errorf("the API servers refused %d requests of ServiceAccounts:\n  %s", len(refused), strings.Join(lines, "\n  "))
	}
	return nil
}

// suiteName names a test package's usage file: the package's directory (go test runs a
// test binary there).
func suiteName() string {
	wd, err := os.Getwd()
	if err != nil {
		return "unknown"
	}
	return filepath.Base(wd)
}

// Suites are the test packages under root/test that bring up labs (their TestMain
// calls labtest.Main), by the names their usage files have.
func Suites(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "test"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "main_test.go" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte("labtest.Main(")) {
			out = append(out, filepath.Base(filepath.Dir(path)))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
