package corpus

import "testing"

func TestMissingNeedsTheWholePath(t *testing.T) {
	msg := `spec.clusters[10].name: Invalid value: "X"; spec.clusters[0].kubeConfig.secretRef.name: Required value`
	for _, tc := range []struct {
		path  string
		named bool
	}{
		{"spec.clusters[10].name", true},
		{"spec.clusters[1]", false},
		{"spec.clusters[0].kubeConfig", true},
		{"spec.clusters[0].kubeConfig.secretRef.name", true},
		{"spec.clusters[0].kube", false},
		{"spec.exports", false},
	} {
		if got := len(Missing(msg, []string{tc.path})) == 0; got != tc.named {
			t.Errorf("%s named = %v, want %v", tc.path, got, tc.named)
		}
	}
}

func TestEveryCaseNamesAPath(t *testing.T) {
	cases, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Errorf("%d invalid ClusterSets; the corpus keeps at least 40", len(cases))
	}
}
