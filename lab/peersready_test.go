package lab

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func peer(cluster, state string) unstructured.Unstructured {
	p := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"clusterID": cluster}}}
	if state != "" {
		p.Object["status"] = map[string]any{"state": state}
	}
	return p
}

// The lab is ready when every other joined cluster has a Peer its active gateway
// health-checked as Connected; a Peer not checked yet, one connecting and a missing one
// each hold it back, named.
func TestUnconnectedNamesWhatHoldsTheLabBack(t *testing.T) {
	for _, tc := range []struct {
		peers  []unstructured.Unstructured
		others []string
		want   []string
	}{
		{[]unstructured.Unstructured{peer("c2", "Connected"), peer("c3", "Connected")}, []string{"c2", "c3"}, nil},
		{[]unstructured.Unstructured{peer("c2", "Connected"), peer("c3", "")}, []string{"c2", "c3"}, []string{"c3: not health-checked yet"}},
		{[]unstructured.Unstructured{peer("c2", "Connecting")}, []string{"c2", "c3"}, []string{"c2: Connecting", "c3: no Peer yet"}},
		// A Peer of a cluster the lab left unjoined is not waited for.
		{[]unstructured.Unstructured{peer("c2", "Connected"), peer("c4", "Error")}, []string{"c2"}, nil},
	} {
		if got := unconnected(tc.peers, tc.others); !slices.Equal(got, tc.want) {
			t.Errorf("unconnected(%v) = %q, want %q", tc.others, got, tc.want)
		}
	}
}
