package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluxcd/pkg/apis/meta"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func twoClusters() *straitv1.ClusterSet {
	return &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "strait-system"},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{
			{Name: "c1", PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}},
			{Name: "c2", PodCIDRs: []string{"10.9.0.0/16"}, ServiceCIDRs: []string{"10.99.0.0/16"}},
		}},
	}
}

// manyClusters makes cs a clusterset of n clusters of one pod and one service CIDR
// each, all the same (for globalnet).
func manyClusters(cs *straitv1.ClusterSet, n int) {
	cs.Spec.Clusters = nil
	for i := range n {
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: fmt.Sprintf("c%d", i),
			PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(cs *straitv1.ClusterSet)
		// want lists substrings that must all appear in one error, per expected error.
		want [][]string
	}{
		{name: "valid", mutate: func(*straitv1.ClusterSet) {}},
		{name: "bad CIDR syntax", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].PodCIDRs[0] = "10.8.0.0/33" },
			want: [][]string{{"spec.clusters[0].podCIDRs[0]", `"10.8.0.0/33"`, "not a CIDR"}}},
		{name: "pod overlaps pod", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].PodCIDRs[0] = "10.8.128.0/17" },
			want: [][]string{{"spec.clusters[1].podCIDRs[0]", "c1", "c2", "10.8.0.0/16", "10.8.128.0/17"}}},
		{name: "service overlaps service", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].ServiceCIDRs[0] = "10.88.0.0/16" },
			want: [][]string{{"spec.clusters[1].serviceCIDRs[0]", "c1", "c2", "10.88.0.0/16"}}},
		{name: "pod overlaps other cluster's services", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].PodCIDRs[0] = "10.88.5.0/24" },
			want: [][]string{{"spec.clusters[1].podCIDRs[0]", "c1", "c2", "serviceCIDRs 10.88.0.0/16", "10.88.5.0/24"}}},
		{name: "own pod overlaps own services", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].ServiceCIDRs[0] = "10.8.0.0/24" },
			want: [][]string{{"spec.clusters[0].serviceCIDRs[0]", "cluster c1", "its own podCIDRs 10.8.0.0/16"}}},
		{name: "overlap allowed under globalnet", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[1].PodCIDRs[0] = "10.8.0.0/16"
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
		}},
		{name: "duplicate names", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].Name = "c1" },
			want: [][]string{{"spec.clusters[1].name", "Duplicate", "c1", "clusters[0]"}}},
		{name: "name not an RFC 1123 label", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].Name = "C_1" },
			want: [][]string{{"spec.clusters[0].name", `"C_1"`, "RFC 1123"}}},
		{name: "globalnet range too small", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "242.0.0.0/24", ClusterSize: 256}
		}, want: [][]string{{"spec.globalnet.cidrRange", "242.0.0.0/24", "too small", "2 clusters", "512"}}},
		{name: "cluster size not a power of two", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 1000}
		}, want: [][]string{{"spec.globalnet.clusterSize", "1000", "power of two"}}},
		{name: "cluster size too large", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 1 << 30}
		}, want: [][]string{{"spec.globalnet.clusterSize", "1073741824", "16777216"}}},
		{name: "1,000 clusters on globalnet, of a size that fits", mutate: func(cs *straitv1.ClusterSet) {
			manyClusters(cs, 1000)
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 16384}
		}},
		{name: "1,000 clusters on globalnet's default size", mutate: func(cs *straitv1.ClusterSet) {
			manyClusters(cs, 1000)
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
		}, want: [][]string{{"spec.globalnet.cidrRange", "242.0.0.0/8", "too small", "1000 clusters", "clusterSize 65536",
			"set spec.globalnet.clusterSize to 16384 (or less)"}}},
		{name: "1,001 clusters", mutate: func(cs *straitv1.ClusterSet) {
			manyClusters(cs, 1001)
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 4096}
		}, want: [][]string{{"spec.clusters", "1001", "at most 1000"}}},
		{name: "too many egress IPs", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterEgressIPs: 100000}
		}, want: [][]string{{"spec.globalnet.clusterEgressIPs", "100000", "between 1 and 256"}}},
		{name: "pin outside range", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "242.0.0.0/8"}
			cs.Spec.Clusters[0].GlobalCIDR = "120.1.0.0/24"
		}, want: [][]string{{"spec.clusters[0].globalCIDR", "120.1.0.0/24", "outside", "242.0.0.0/8"}}},
		{name: "pins overlap", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "120.0.0.0/8", ClusterSize: 256}
			cs.Spec.Clusters[0].GlobalCIDR = "120.1.2.0/24"
			cs.Spec.Clusters[1].GlobalCIDR = "120.1.2.0/24"
		}, want: [][]string{{"spec.clusters[1].globalCIDR", "c1", "c2", "120.1.2.0/24", "overlap"}}},
		{name: "pin with host bits", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "120.0.0.0/8"}
			cs.Spec.Clusters[0].GlobalCIDR = "120.1.0.7/24"
		}, want: [][]string{{"spec.clusters[0].globalCIDR", "120.1.0.0/24"}}},
		{name: "egress IPs larger than global CIDR", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 8, ClusterEgressIPs: 8}
		}, want: [][]string{{"spec.globalnet.clusterEgressIPs", "8 egress IPs", "8 addresses"}}},
		{name: "pinned CIDR smaller than clusterSize", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "120.0.0.0/8"}
			cs.Spec.Clusters[0].GlobalCIDR = "120.1.0.0/28"
		}, want: [][]string{{"spec.clusters[0].globalCIDR", "c1", "16 addresses", "clusterSize is 65536", "pin a /16"}}},
		{name: "pin without globalnet", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].GlobalCIDR = "242.1.0.0/16" },
			want: [][]string{{"spec.clusters[0].globalCIDR", "globalnet.enabled is false"}}},
		{name: "export names unknown cluster", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "sample", Name: "web", Clusters: []string{"c9"}}}
		}, want: [][]string{{"spec.exports[0].clusters[0]", "Not found", `"c9"`}}},
		{name: "duplicate export", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "sample", Name: "web"}, {Namespace: "sample", Name: "web"}}
		}, want: [][]string{{"spec.exports[1]", "Duplicate", "sample/web"}}},
		{name: "unknown cable driver", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Cable.Driver = "gre" },
			want: [][]string{{"spec.cable.driver", `"gre"`, "wireguard", "ipsec", "vxlan"}}},
		{name: "bad port", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Cable.Port = 70000 },
			want: [][]string{{"spec.cable.port", "70000", "between 1 and 65535"}}},
		{name: "ipsec without psk", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Cable.Driver = straitv1.CableIPsec },
			want: [][]string{{"spec.cable.pskSecretRef", "pre-shared key"}}},
		{name: "pod CIDR with host bits", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].PodCIDRs[0] = "10.8.0.1/16" },
			want: [][]string{{"spec.clusters[0].podCIDRs[0]", `"10.8.0.1/16"`, "host bits", "10.8.0.0/16"}}},
		{name: "loopback pod CIDR", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].PodCIDRs[0] = "127.8.0.0/16" },
			want: [][]string{{"spec.clusters[0].podCIDRs[0]", "127.0.0.0/8", "loopback"}}},
		{name: "global range over a cluster's pods", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "10.9.0.0/16", ClusterSize: 256}
		}, want: [][]string{{"spec.globalnet.cidrRange", "cluster c2", "podCIDRs 10.9.0.0/16"}}},
		{name: "global range checked while globalnet is off", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{CIDRRange: "fd00::/8"}
		}, want: [][]string{{"spec.globalnet.cidrRange", "must be IPv4"}}},
		{name: "kubeconfig Secret without a name", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[0].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{}}
		}, want: [][]string{{"spec.clusters[0].kubeConfig.secretRef.name", "Required"}}},
		{name: "two clusters of one kubeconfig Secret", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[0].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "c1-kubeconfig"}}
			cs.Spec.Clusters[1].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "c1-kubeconfig", Key: "value"}}
		}, want: [][]string{{"spec.clusters[1].kubeConfig.secretRef", `"c1-kubeconfig"`, "spec.clusters[0] (c1)", "spec.clusters[1] (c2)",
			"Secret c1-kubeconfig key value", "registered twice"}}},
		{name: "one Secret, two keys", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[0].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "members", Key: "c1"}}
			cs.Spec.Clusters[1].KubeConfig = &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "members", Key: "c2"}}
		}},
		{name: "kubeconfig from a ConfigMap", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[0].KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "id"}}
		}, want: [][]string{{"spec.clusters[0].kubeConfig.configMapRef", "not supported", "secretRef"}}},
		{name: "zone shadowing cluster.local", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.DNS.ExtraZones = []string{"svc.cluster.local."} },
			want: [][]string{{"spec.dns.extraZones[0]", "svc.cluster.local.", "shadow cluster.local"}}},
		{name: "interval too short", mutate: func(cs *straitv1.ClusterSet) { cs.Spec.Interval = &metav1.Duration{Duration: time.Second} },
			want: [][]string{{"spec.interval", `"1s"`, "from 10s to 24h"}}},
		{name: "export cluster listed twice", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "sample", Name: "web", Clusters: []string{"c1", "c1"}}}
		}, want: [][]string{{"spec.exports[0].clusters[1]", "Duplicate", "c1"}}},
		{name: "ipsec with psk", mutate: func(cs *straitv1.ClusterSet) {
			cs.Spec.Cable = straitv1.CableSpec{Driver: straitv1.CableIPsec, PSKSecretRef: &meta.LocalObjectReference{Name: "psk"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := twoClusters()
			tt.mutate(cs)
			errs := Validate(cs)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(errs), len(tt.want), errs.ToAggregate())
			}
			for i, parts := range tt.want {
				msg := errs[i].Error()
				for _, p := range parts {
					if !strings.Contains(msg, p) {
						t.Errorf("error %d %q does not mention %q", i, msg, p)
					}
				}
			}
		})
	}
}

func TestParseIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: x}\nspec:\n  clusterz: []\n",
		"wrong kind":      "apiVersion: strait.io/v1alpha1\nkind: Cluster\nmetadata: {name: x}\n",
		"wrong version":   "apiVersion: strait.io/v1\nkind: ClusterSet\nmetadata: {name: x}\n",
		"two documents":   "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\n---\napiVersion: strait.io/v1alpha1\nkind: ClusterSet\n",
		"key given twice": "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: x}\nspec:\n  cable: {port: 4500, port: 4501}\n",
		"wrong case":      "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: x}\nspec:\n  Clusters: []\n",
		"nested unknown":  "apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: x}\nspec:\n  clusters:\n  - name: a\n    podCIDR: 10.0.0.0/16\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: Parse accepted it", name)
		}
	}
	if _, err := Parse([]byte("# leading comment\n---\napiVersion: strait.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: x}\n")); err != nil {
		t.Errorf("a comment-only first document is not a document: %v", err)
	}
}
