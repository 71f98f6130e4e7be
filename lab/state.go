package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/internal/pki"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan/file"
)

// DefaultStateDir keeps pids, certificates, kubeconfigs, logs and data of the lab.
const DefaultStateDir = "/run/strait-lab"

// Record is what lab.json keeps: enough for down, status, exec and the daemon to work
// without the original files.
type Record struct {
	Spec topology.Spec `json:"spec"`
	// ClusterSet is the manifest's content as it was at "up".
	ClusterSet []byte `json:"clusterSet"`
	// PortBase is the host loopback port of the hub's API server; members follow.
	PortBase int `json:"portBase"`
	// Networks are the lab's own ranges as "up" chose them (Spec.Networks holds only what
	// the lab file pins): the host's routes into the lab make the host look different
	// afterwards, and the lab must keep its ranges.
	Networks topology.Networks `json:"networks,omitzero"`
}

// State is the lab's directory.
type State struct{ Dir string }

func (s State) path(parts ...string) string {
	return filepath.Join(append([]string{s.Dir}, parts...)...)
}

// ClusterDir is a cluster's directory (certificates, kubeconfigs, logs, etcd data).
func (s State) ClusterDir(cluster string) string { return s.path(cluster) }

// CharonDir holds a gateway node's strongswan.conf and VICI socket (straitd charon --dir).
func (s State) CharonDir(cluster, node string) string { return s.path(cluster, "charon", node) }

// LogPath is where a process of a cluster writes its output.
func (s State) LogPath(cluster, name string) string { return s.path(cluster, "logs", name+".log") }

// KubeconfigPath is a cluster's kubeconfig for the host (through the forwarder).
func (s State) KubeconfigPath(cluster string) string { return s.path(cluster, "kubeconfig") }

// InNamespaceKubeconfig reaches the API server on the control-plane namespace's loopback.
func (s State) InNamespaceKubeconfig(cluster string) string {
	return s.path(cluster, "kubeconfig-local")
}

// LANKubeconfig reaches the API server over the cluster LAN, for processes on nodes.
func (s State) LANKubeconfig(cluster string) string { return s.path(cluster, "kubeconfig-lan") }

// PKI is a cluster's certificate files.
func (s State) PKI(cluster string) pki.Files { return pki.FilesIn(s.path(cluster, "pki")) }

// ReadRecord loads lab.json; os.ErrNotExist when no lab is up.
func (s State) ReadRecord() (*Record, error) {
	data, err := os.ReadFile(s.path("lab.json"))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.path("lab.json"), err)
	}
	return &r, nil
}

// WriteRecord saves lab.json.
func (s State) WriteRecord(r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(s.path("lab.json"), data, 0o600)
}

// pidPath names the pid file of a process.
func (s State) pidPath(cluster, name string) string { return s.path(cluster, "pids", name+".pid") }

// WritePid records a started process.
func (s State) WritePid(cluster, name string, pid int) error {
	if err := os.MkdirAll(filepath.Dir(s.pidPath(cluster, name)), 0o700); err != nil {
		return err
	}
	return os.WriteFile(s.pidPath(cluster, name), []byte(strconv.Itoa(pid)), 0o600)
}

// Pid returns a recorded process's pid when it still runs.
func (s State) Pid(cluster, name string) (int, bool) {
	data, err := os.ReadFile(s.pidPath(cluster, name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !netns.Alive(pid) {
		return 0, false
	}
	return pid, true
}

// AllPids lists every pid file (cluster/name → pid), running or not.
func (s State) AllPids() map[string]int {
	out := map[string]int{}
	files, _ := filepath.Glob(s.path("*", "pids", "*.pid"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			rel, _ := filepath.Rel(s.Dir, f)
			out[strings.TrimSuffix(strings.Replace(rel, "/pids/", "/", 1), ".pid")] = pid
		}
	}
	return out
}

// writeKubeconfig writes an admin kubeconfig for server.
func writeKubeconfig(path, cluster, server string, f pki.Files) error {
	ca, err1 := os.ReadFile(f.CACert)
	crt, err2 := os.ReadFile(f.AdminCert)
	key, err3 := os.ReadFile(f.AdminKey)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	name := "strait-lab-" + cluster
	if cluster == topology.HubName {
		name = "strait-lab-hub"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// JoinedClusterSet is the ClusterSet file as the lab commits it to git: the lab file's,
// less the spec's unjoined clusters (their entries, and they from every export naming
// them), its comments and layout kept.
func (r *Record) JoinedClusterSet() ([]byte, error) {
	data := r.ClusterSet
	for _, name := range r.Spec.Unjoined {
		var err error
		if data, err = file.RemoveCluster(data, name); err != nil {
			return nil, fmt.Errorf("the ClusterSet without unjoined cluster %s: %w", name, err)
		}
	}
	return data, nil
}
