package gateway

import (
	"errors"
	"fmt"
	"time"
)

// The agent's flags for Timing, named in Validate's errors.
const (
	FlagLeaseDuration = "--lease-duration"
	FlagRenewDeadline = "--renew-deadline"
	FlagRetryPeriod   = "--retry-period"
)

// renewJitter is client-go's leaderelection.JitterFactor: a renew deadline must leave
// room for more than one retry period stretched by that much.
const renewJitter = 1.2

// Timing of the election.
//
// A crashed gateway is replaced LeaseDuration after a standby last saw it renew; a
// released Lease is taken as soon as a standby's watch shows the release. The active
// gateway renews every RetryPeriod and steps down when it has not renewed within
// RenewDeadline, which is shorter than LeaseDuration so that it has stopped before any
// standby may take over.
type Timing struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// FastTiming is tuned for the failover targets (< 2 s after a crash, < 0.5 s on a
// graceful handover). It costs the API server one Lease update every 250 ms from the
// active gateway, 4 writes/s per cluster; standbys only watch.
func FastTiming() Timing {
	return Timing{LeaseDuration: time.Second, RenewDeadline: 700 * time.Millisecond, RetryPeriod: 250 * time.Millisecond}
}

// Validate refuses a Timing that could let two gateways be active at once or that the
// Lease cannot carry, naming the flag, its value and the constraint.
func (t Timing) Validate() error {
	var errs []error
	switch {
	case t.LeaseDuration < time.Second:
		errs = append(errs, fmt.Errorf("%s %v: must be at least 1s (the Lease stores whole seconds in spec.leaseDurationSeconds)",
			FlagLeaseDuration, t.LeaseDuration))
	case t.LeaseDuration%time.Second != 0:
		errs = append(errs, fmt.Errorf("%s %v: must be a whole number of seconds (the Lease stores spec.leaseDurationSeconds; use %v or %v)",
			FlagLeaseDuration, t.LeaseDuration, t.LeaseDuration.Truncate(time.Second), t.LeaseDuration.Truncate(time.Second)+time.Second))
	}
	if t.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("%s %v: must be positive", FlagRetryPeriod, t.RetryPeriod))
	}
	if t.RenewDeadline >= t.LeaseDuration {
		errs = append(errs, fmt.Errorf("%s %v: must be shorter than %s %v, so that the active gateway has stepped down before a standby may take over",
			FlagRenewDeadline, t.RenewDeadline, FlagLeaseDuration, t.LeaseDuration))
	}
	if floor := time.Duration(renewJitter * float64(t.RetryPeriod)); t.RetryPeriod > 0 && t.RenewDeadline <= floor {
		errs = append(errs, fmt.Errorf("%s %v: must be longer than %s %v × %v = %v, so that a failed renewal is retried before the active gateway steps down",
			FlagRenewDeadline, t.RenewDeadline, FlagRetryPeriod, t.RetryPeriod, renewJitter, floor))
	}
	return errors.Join(errs...)
}
