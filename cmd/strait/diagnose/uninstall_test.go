package diagnose

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestGitopsOfNamesTheSyncThatAppliesTheClusterSet(t *testing.T) {
	for _, tc := range []struct {
		labels, annotations map[string]string
		want                string
	}{
		{map[string]string{fluxNameLabel: "clusterset", fluxNamespaceLabel: "flux-system"}, nil, "Flux Kustomization flux-system/clusterset"},
		{nil, map[string]string{argoTrackingID: "apps_clusterset:strait.io/ClusterSet:strait-system/demo"}, "Argo CD Application apps/clusterset"},
		{nil, map[string]string{argoTrackingID: "clusterset:strait.io/ClusterSet:strait-system/demo"}, "Argo CD Application argocd/clusterset"},
		{map[string]string{argoInstanceLabel: "clusterset"}, nil, "Argo CD Application argocd/clusterset"},
		{map[string]string{"app": "x"}, nil, ""},
	} {
		cs := straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}}
		got := ""
		if g := gitopsOf(cs); g != nil {
			got = g.String()
		}
		if got != tc.want {
			t.Errorf("labels %v annotations %v: %q, want %q", tc.labels, tc.annotations, got, tc.want)
		}
	}
}
