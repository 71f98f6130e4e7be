package plan

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Two entries whose members were observed with one kube-system UID are one cluster:
// Compute refuses them, naming both entries, their kubeconfigs and the UID; entries of
// distinct or unknown UIDs are computed as before.
func TestComputeRefusesOneClusterUnderTwoNames(t *testing.T) {
	threeClusters := func() *straitv1.ClusterSet {
		cs := twoClusters()
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: "c3",
			PodCIDRs: []string{"10.10.0.0/16"}, ServiceCIDRs: []string{"10.110.0.0/16"}})
		for i := range cs.Spec.Clusters {
			name := cs.Spec.Clusters[i].Name
			cs.Spec.Clusters[i].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name + "-kubeconfig"}}
		}
		return cs
	}
	observed := func(uids ...types.UID) Observed {
		obs := Observed{}
		for i, uid := range uids {
			obs[[]string{"c1", "c2", "c3"}[i]] = &MemberFacts{KubeSystemUID: uid}
		}
		return obs
	}
	for _, tc := range []struct {
		name   string
		mutate func(*straitv1.ClusterSet)
		obs    Observed
		want   [][]string // substrings of each error, in order
	}{
		{name: "three clusters", obs: observed("uid-1", "uid-2", "uid-3")},
		{name: "one not observed, two the same", obs: observed("uid-1", "", "uid-1"),
			want: [][]string{{"spec.clusters[2].kubeConfig", `"Secret c3-kubeconfig key value"`,
				"spec.clusters[0] (c1, Secret c1-kubeconfig key value) and spec.clusters[2] (c3, Secret c3-kubeconfig key value)",
				"UID uid-1", "registered twice", "give c3 the kubeconfig of the cluster it is meant to be"}}},
		{name: "nothing observed", obs: nil},
		{name: "the hub's own cluster twice over", obs: observed("uid-hub", "uid-2", "uid-hub"),
			mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].KubeConfig = nil },
			want:   [][]string{{"spec.clusters[2].kubeConfig", "spec.clusters[0] (c1, the hub's own cluster)", "UID uid-hub"}}},
		{name: "all three one cluster", obs: observed("uid-1", "uid-1", "uid-1"),
			want: [][]string{
				{"spec.clusters[1].kubeConfig", "spec.clusters[0] (c1", "spec.clusters[1] (c2"},
				{"spec.clusters[2].kubeConfig", "spec.clusters[0] (c1", "spec.clusters[2] (c3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := threeClusters()
			if tc.mutate != nil {
				tc.mutate(cs)
			}
			p, errs := Compute(cs, tc.obs)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), errs.ToAggregate())
			}
			if len(errs) > 0 {
				if p != nil {
					t.Error("a plan came with the errors: the hub would write it")
				}
				for i, parts := range tc.want {
					for _, part := range parts {
						if !strings.Contains(errs[i].Error(), part) {
							t.Errorf("error %d %q does not say %q", i, errs[i].Error(), part)
						}
					}
				}
				return
			}
			for _, c := range p.Status.Clusters {
				if want := tc.obs[c.Name]; want != nil && c.KubeSystemUID != string(want.KubeSystemUID) {
					t.Errorf("status of %s: kubeSystemUID %q, want %q", c.Name, c.KubeSystemUID, want.KubeSystemUID)
				}
			}
		})
	}
}

// `strait render --observed` takes the kube-system Namespace as kubectl prints it, and
// no other namespace.
func TestDecodeObservedTakesTheKubeSystemUID(t *testing.T) {
	f := &MemberFacts{}
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n  uid: 6f1d0c1e-0000-4000-8000-000000000001\n"
	if err := DecodeObserved("c1.yaml", []byte(ns), f); err != nil {
		t.Fatal(err)
	}
	if f.KubeSystemUID != "6f1d0c1e-0000-4000-8000-000000000001" {
		t.Errorf("KubeSystemUID %q", f.KubeSystemUID)
	}
	err := DecodeObserved("c1.yaml", []byte(strings.Replace(ns, "kube-system", "default", 1)), &MemberFacts{})
	if err == nil || !strings.Contains(err.Error(), `namespace "default"`) {
		t.Errorf("another namespace: %v", err)
	}
}
