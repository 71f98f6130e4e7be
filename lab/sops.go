package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/topology"
)

// sopsSecret is the Secret in flux-system holding the lab's age identity, with which
// kustomize-controller decrypts SOPS-encrypted files of the repo (strait join --sops),
// as docs/gitops.md tells users to give their Kustomization.
const (
	sopsSecret = "sops-age"
	sopsKey    = "age.agekey"
)

// sopsIdentityPath is the lab's age identity, made at the first up.
func (l *Lab) sopsIdentityPath() string {
	return filepath.Join(l.state.ClusterDir(topology.HubName), "sops-age.agekey")
}

// ensureSOPSSecret makes the lab's age identity unless it exists and puts it into the
// hub as Flux's decryption Secret.
func (l *Lab) ensureSOPSSecret(ctx context.Context, hub kubernetes.Interface) error {
	path := l.sopsIdentityPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id, gerr := age.GenerateX25519Identity()
		if gerr != nil {
			return gerr
		}
		data = []byte(id.String() + "\n")
		err = os.WriteFile(path, data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("the lab's age identity: %w", err)
	}
	return createSecret(ctx, hub, flux.Namespace, sopsSecret, map[string][]byte{sopsKey: data}, true)
}

// SOPSRecipient is the age recipient of the lab's identity: `strait join --sops` encrypts
// to it, and the lab's Flux decrypts.
func (l *Lab) SOPSRecipient() (string, error) {
	data, err := os.ReadFile(l.sopsIdentityPath())
	if err != nil {
		return "", fmt.Errorf("the lab's age identity (made by lab up): %w", err)
	}
	id, err := age.ParseX25519Identity(strings.TrimSpace(string(data)))
	if err != nil {
		return "", err
	}
	return id.Recipient().String(), nil
}
