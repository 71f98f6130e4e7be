package lab

import (
	"os"
	"path/filepath"
	"strings"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/flux"
)

// auditPolicy is what every API server of the lab records: each request of Strait's and
// Flux's ServiceAccounts, at Metadata level (who, verb, resource, namespace, name, the
// authorizer's decision; no bodies), and every write of an RBAC object by anyone, which
// dates an uninstall and a reinstall. test/rbacaudit holds Strait's roles to this log.
// Everything else is left out: the control plane's own traffic would dwarf it.
var auditPolicy = strings.Join([]string{
	"apiVersion: audit.k8s.io/v1",
	"kind: Policy",
	"omitStages: [RequestReceived]",
	"rules:",
	"  - level: Metadata",
	"    resources: [{group: rbac.authorization.k8s.io}]",
	"    verbs: [create, update, patch, delete, deletecollection]",
	"  - level: Metadata",
	"    userGroups: [system:serviceaccounts:" + straitv1.SystemNamespace + ", system:serviceaccounts:" + flux.Namespace + "]",
	"  - level: None",
	"",
}, "\n")

// AuditLogPath is where a cluster's API server writes its audit log.
func (s State) AuditLogPath(cluster string) string { return s.path(cluster, "logs", "audit.log") }

// AuditLogs are the audit logs of the lab's clusters, by cluster.
func (s State) AuditLogs() map[string]string {
	out := map[string]string{}
	files, _ := filepath.Glob(s.AuditLogPath("*"))
	for _, f := range files {
		rel, _ := filepath.Rel(s.Dir, f)
		cluster, _, _ := strings.Cut(rel, string(filepath.Separator))
		out[cluster] = f
	}
	return out
}

// auditFlags writes the policy into the cluster's directory and returns the API
// server's flags for it: one file, never rotated (a long e2e run writes a few MB), each
// event written before the request is answered (the log backend's blocking mode, its
// default).
func (l *Lab) auditFlags(cluster string) ([]string, error) {
	policy := filepath.Join(l.state.ClusterDir(cluster), "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file", policy, "--audit-log-path", l.state.AuditLogPath(cluster),
		"--audit-log-format", "json", "--audit-log-maxsize", "0"}, nil
}
