package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// APIServerStart is one start of a cluster's API server by the lab: until Ready it
// serves requests while its RBAC informers still fill, and may refuse what the roles
// allow (kubernetes#121635); the RBAC check does not blame the roles for that.
type APIServerStart struct {
	Started time.Time `json:"started"`
	// Ready is when the lab saw /readyz answer ok (which waits for those informers).
	Ready time.Time `json:"ready"`
}

func (s State) apiServerStartsPath(cluster string) string {
	return s.path(cluster, "logs", "kube-apiserver.starts")
}

func (s State) recordAPIServerStart(cluster string, st APIServerStart) error {
	line, err := json.Marshal(st)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.apiServerStartsPath(cluster), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

// APIServerStarts are the recorded starts of a cluster's API server, oldest first.
func (s State) APIServerStarts(cluster string) ([]APIServerStart, error) {
	f, err := os.Open(s.apiServerStartsPath(cluster))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []APIServerStart
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var st APIServerStart
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			return nil, fmt.Errorf("%s: %w", s.apiServerStartsPath(cluster), err)
		}
		out = append(out, st)
	}
	return out, sc.Err()
}
