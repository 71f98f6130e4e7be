package topology

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/straitnet/strait/nodeagent/gateway"
)

// GatewayLease is the gateway Lease timing a lab runs every agent with (straitd agent's
// --lease-duration, --renew-deadline and --retry-period), as docs/agent.md tells users
// whose API server stalls past the default 700 ms renew deadline: a lab of four
// clusters on two cores is such a cluster (test/e2e/shapes).
type GatewayLease struct {
	Duration      metav1.Duration `json:"duration"`
	RenewDeadline metav1.Duration `json:"renewDeadline"`
	RetryPeriod   metav1.Duration `json:"retryPeriod"`
}

// StallProneLease is docs/agent.md's timing for an API server that can stall past the
// default renew deadline: a crash costs about 2 s, the holder writes 2 times a second.
var StallProneLease = GatewayLease{
	Duration:      metav1.Duration{Duration: 2 * time.Second},
	RenewDeadline: metav1.Duration{Duration: 1500 * time.Millisecond},
	RetryPeriod:   metav1.Duration{Duration: 500 * time.Millisecond},
}

// Args are the agent's flags for the timing.
func (g GatewayLease) Args() []string {
	return []string{
		gateway.FlagLeaseDuration + "=" + g.Duration.Duration.String(),
		gateway.FlagRenewDeadline + "=" + g.RenewDeadline.Duration.String(),
		gateway.FlagRetryPeriod + "=" + g.RetryPeriod.Duration.String(),
	}
}

// check refuses a timing the agent would refuse at its start (and crash-loop on), by
// the agent's own rules (gateway.Timing.Validate): each violation is named on the lab
// file's fields whose flags it names (a rule between two fields, on both).
func (g GatewayLease) check(fp *field.Path) field.ErrorList {
	t := gateway.Timing{LeaseDuration: g.Duration.Duration, RenewDeadline: g.RenewDeadline.Duration, RetryPeriod: g.RetryPeriod.Duration}
	err := t.Validate()
	if err == nil {
		return nil
	}
	violations := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		violations = joined.Unwrap()
	}
	fields := []struct {
		flag, name string
		value      time.Duration
	}{
		{gateway.FlagLeaseDuration, "duration", t.LeaseDuration},
		{gateway.FlagRenewDeadline, "renewDeadline", t.RenewDeadline},
		{gateway.FlagRetryPeriod, "retryPeriod", t.RetryPeriod},
	}
	var errs field.ErrorList
	for _, v := range violations {
		for _, f := range fields {
			if strings.Contains(v.Error(), f.flag+" ") {
				errs = append(errs, field.Invalid(fp.Child(f.name), f.value.String(), v.Error()))
			}
		}
	}
	return errs
}
