package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestFastTimingIsValid(t *testing.T) {
	if err := FastTiming().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTimingValidateNamesFlagValueAndConstraint(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		timing Timing
		want   []string // each must appear in the error; none: valid
	}{
		{"client-go's defaults", Timing{15 * time.Second, 10 * time.Second, 2 * time.Second}, nil},
		{"sub-second lease", Timing{500 * ms, 300 * ms, 100 * ms},
			[]string{"--lease-duration 500ms", "at least 1s", "whole seconds"}},
		{"fractional lease", Timing{1500 * ms, 700 * ms, 250 * ms},
			[]string{"--lease-duration 1.5s", "whole number of seconds", "use 1s or 2s"}},
		{"renew deadline as long as the lease", Timing{time.Second, time.Second, 250 * ms},
			[]string{"--renew-deadline 1s", "shorter than --lease-duration 1s"}},
		{"renew deadline within one jittered retry", Timing{time.Second, 300 * ms, 250 * ms},
			[]string{"--renew-deadline 300ms", "longer than --retry-period 250ms × 1.2 = 300ms"}},
		{"no retry period", Timing{time.Second, 700 * ms, 0},
			[]string{"--retry-period 0s", "positive"}},
		{"all wrong at once", Timing{0, 0, -ms},
			[]string{"--lease-duration 0s", "--renew-deadline 0s", "--retry-period -1ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.timing.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("%+v refused: %v", tc.timing, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%+v accepted", tc.timing)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
