package clusters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HubAccessUser is a user with exactly the hub's role in a member: for Options.MemberUser,
// then GrantHubAccess on each member.
const HubAccessUser = "strait-hub-access-test"

// GrantHubAccess installs the hub's role in member c as kustomize/member gives it to the
// strait-hub-access ServiceAccount (its ClusterRole and its Role in strait-system) and
// binds both to user, so that a test reaches the member with no more than the hub may.
func (c *Cluster) GrantHubAccess(ctx context.Context, user string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, "kustomize", "member", "workloads", "hub-access.yaml"))
	if err != nil {
		return err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for {
		var obj struct {
			Kind     string              `json:"kind"`
			Metadata metav1.ObjectMeta   `json:"metadata"`
			Rules    []rbacv1.PolicyRule `json:"rules"`
		}
		switch err := dec.Decode(&obj); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("kustomize/member/workloads/hub-access.yaml: %w", err)
		}
		name := obj.Metadata.Name + "-" + user
		var objs []client.Object
		switch obj.Kind {
		case "ClusterRole":
			objs = []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: obj.Rules},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}}
		case "Role":
			ns := obj.Metadata.Namespace
			objs = []client.Object{&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: obj.Rules},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}}
		}
		for _, o := range objs {
			if err := c.Client.Create(ctx, o); err != nil {
				return fmt.Errorf("%s: %s %s: %w", c.Name, obj.Kind, name, err)
			}
		}
	}
}
