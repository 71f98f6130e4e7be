package show

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestAdvertisedEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		ep   straitv1.PeerEndpoint
		want string
	}{
		{"an address", straitv1.PeerEndpoint{IP: "198.51.100.7", Port: 4500}, "198.51.100.7:4500"},
		{"a hostname the dialing side resolves", straitv1.PeerEndpoint{Hostname: "gw.example.org", Port: 4500}, "gw.example.org:4500"},
		{"behind masquerade: it dials", straitv1.PeerEndpoint{BehindMasquerade: true, Port: 4500}, "behind-masquerade"},
		{"nothing yet", straitv1.PeerEndpoint{Port: 4500}, ""},
	} {
		if got := advertisedEndpoint(&tc.ep); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDualStackRendersBothFamilies: a dual-stack member's CIDRs, its gateway reached at
// an IPv6 endpoint and a dual-stack import render in their columns and in -o json; an
// import listing IPv6 without an IPv6 clusterset IP is a finding naming it.
func TestDualStackRendersBothFamilies(t *testing.T) {
	st := &State{ClusterSet: &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "strait-system", Name: "ds"}}, Members: []Member{{
		Name: "c1",
		Membership: &straitv1.Membership{Spec: straitv1.MembershipSpec{PodCIDRs: []string{"10.8.0.0/16", "fd10:1ab:0:8000::/56"},
			ServiceCIDRs: []string{"10.88.0.0/16", "fd10:1ab:0:100::/112"}}},
		Gateways: []straitv1.Gateway{{Spec: straitv1.GatewaySpec{NodeName: "c1-gw-1", HAState: straitv1.HAActive, IP: "fd10:1ab:0:200::b", Port: 51871,
			Driver: straitv1.CableWireGuard, HealthCheckIP: "10.8.255.255", HealthCheckIPv6: "fd10:1ab:0:80ff:ffff:ffff:ffff:ffff"}}},
		Imports: []mcsv1.ServiceImport{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "sample", Name: "whereami-cs"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, IPs: []string{"10.88.3.4", "fd10:1ab:0:100::3:4"}},
				Status: mcsv1.ServiceImportStatus{Clusters: []mcsv1.ClusterStatus{{Cluster: "c2"}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "sample", Name: "half"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, IPs: []string{"10.88.3.5"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "sample", Name: "whereami-ss"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.Headless,
				IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}}},
		},
	}}}
	views := []string{viewGateways, viewEndpoints, viewNetworks, viewImports}
	r := report(st, views, straitv1.Build{})
	var out strings.Builder
	if err := printReport(&out, r, views, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"c1        c1-gw-1   active   [fd10:1ab:0:200::b]:51871",
		"c1        c1-gw-1          [fd10:1ab:0:200::b]:51871   wireguard   10.8.255.255,fd10:1ab:0:80ff:ffff:ffff:ffff:ffff",
		"c1        10.8.0.0/16,fd10:1ab:0:8000::/56   10.88.0.0/16,fd10:1ab:0:100::/112",
		"c1        sample      whereami-cs   ClusterSetIP   IPv4,IPv6   10.88.3.4,fd10:1ab:0:100::3:4   c2",
		"c1        sample      whereami-ss   Headless       IPv6        -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0], "c1: import sample/half lists IPv6 in ipFamilies but has no IPv6 clusterset IP (ips 10.88.3.5)") {
		t.Errorf("findings %q", r.Findings)
	}
	var js strings.Builder
	if err := printReport(&js, r, views, "json", time.Now()); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Imports[0]; !slices.Equal(got.IPs, []string{"10.88.3.4", "fd10:1ab:0:100::3:4"}) || !slices.Equal(got.IPFamilies, []string{"IPv4", "IPv6"}) ||
		!slices.Equal(back.Networks[0].PodCIDRs, []string{"10.8.0.0/16", "fd10:1ab:0:8000::/56"}) || back.Gateways[0].Endpoint != "[fd10:1ab:0:200::b]:51871" {
		t.Errorf("-o json: %s", js.String())
	}
}
