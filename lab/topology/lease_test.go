package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A lab file's gateway Lease timing is refused, with its field named, where straitd
// agent would refuse it at its start and crash-loop.
func TestGatewayLeaseTimingIsCheckedAsTheAgentChecksIt(t *testing.T) {
	d := func(s string) metav1.Duration { v, _ := time.ParseDuration(s); return metav1.Duration{Duration: v} }
	for _, c := range []struct {
		lease GatewayLease
		want  string // "" valid, else the field named
	}{
		{StallProneLease, ""},
		{GatewayLease{d("1s"), d("700ms"), d("250ms")}, ""},
		{GatewayLease{d("1500ms"), d("1s"), d("250ms")}, "lab.gatewayLease.duration"},
		{GatewayLease{d("2s"), d("2s"), d("500ms")}, "lab.gatewayLease.renewDeadline"},
		{GatewayLease{d("2s"), d("500ms"), d("500ms")}, "lab.gatewayLease.retryPeriod"},
		{GatewayLease{d("2s"), d("1s"), d("0s")}, "lab.gatewayLease.retryPeriod"},
	} {
		errs := c.lease.check(field.NewPath("lab", "gatewayLease"))
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%v: refused: %v", c.lease.Args(), errs)
		case c.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), c.want)):
			t.Errorf("%v: %v, want an error naming %s", c.lease.Args(), errs, c.want)
		}
	}
}
