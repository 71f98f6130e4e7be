package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Daemons that report their build.
const (
	DaemonHub   = "hub"
	DaemonAgent = "agent"
	DaemonDNS   = "dns"
)

// Build says which Strait a daemon runs: what `straitd version` prints. The image tag
// alone (`:dev`, `:latest`) does not say it.
type Build struct {
	// Version is the release, "dev" for an image built without one, or "devel" for a
	// binary built from a working tree without the Makefile.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version"`
	// Revision is the git commit the daemon was built from, with "-dirty" when the tree
	// had uncommitted changes, "unknown" outside git.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision"`
}

// DaemonStatus is one running daemon as it reports itself, so that `strait version`
// and `strait show versions` read every daemon's build through the objects the hub
// already reads, without exec and without reading pods.
type DaemonStatus struct {
	// Name is unique in the object: "agent/<node>", "dns/<pod>", "hub/<pod>".
	// +required
	// +kubebuilder:validation:MaxLength=320
	Name string `json:"name"`
	// Daemon: hub, agent or dns.
	// +required
	// +kubebuilder:validation:Enum=hub;agent;dns
	Daemon string `json:"daemon"`
	// Node the daemon runs on (the agent's; empty where the daemon does not know it).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
	// Pod the daemon runs in (its hostname; empty for the agent, which shares the node's).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`
	// Build of the daemon's binary.
	// +required
	Build Build `json:"build"`
	// Since is when this process started.
	// +required
	Since metav1.Time `json:"since"`
}
