package labtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// alertsAPI is a Prometheus whose alerts API answers from answer, given the time since
// its first call; the rest of promv1.API is not used by an AlertWatch.
type alertsAPI struct {
	promv1.API
	mu     sync.Mutex
	start  time.Time
	answer func(since time.Duration) ([]promv1.Alert, error)
}

func (a *alertsAPI) Alerts(context.Context) (promv1.AlertsResult, error) {
	a.mu.Lock()
	if a.start.IsZero() {
		a.start = time.Now()
	}
	since := time.Since(a.start)
	a.mu.Unlock()
	alerts, err := a.answer(since)
	return promv1.AlertsResult{Alerts: alerts}, err
}

// errorsOf records what a check reports instead of failing the test that runs it.
type errorsOf struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (e *errorsOf) Helper() {}
func (e *errorsOf) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// Never vouches for an alert's absence only over what its polls saw: quiet polls pass,
// an alert seen pending fails, and so does a stretch without a good poll longer than
// NeverGap in the middle of the window, although the last poll answered.
func TestNeverFailsOnAnAlertOrAGapInItsPolls(t *testing.T) {
	pending := []promv1.Alert{{Labels: model.LabelSet{"alertname": "StraitDNSDown"}, State: promv1.AlertStatePending}}
	for _, c := range []struct {
		name   string
		answer func(since time.Duration) ([]promv1.Alert, error)
		want   string
	}{
		{"quiet", func(time.Duration) ([]promv1.Alert, error) { return nil, nil }, ""},
		{"pending for a poll", func(since time.Duration) ([]promv1.Alert, error) {
			if since > 500*time.Millisecond && since < 800*time.Millisecond {
				return pending, nil
			}
			return nil, nil
		}, "went active"},
		{"blind in the middle", func(since time.Duration) ([]promv1.Alert, error) {
			if since > 300*time.Millisecond && since < 300*time.Millisecond+NeverGap+300*time.Millisecond {
				return nil, errors.New("connection refused")
			}
			return nil, nil
		}, "without a good poll"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := watchAlerts(t, "c1", &alertsAPI{answer: c.answer})
			time.Sleep(NeverGap + 1500*time.Millisecond)
			rec := &errorsOf{TB: t}
			w.Never(rec, "StraitDNSDown")
			got := strings.Join(rec.errs, "; ")
			switch {
			case c.want == "" && got != "":
				t.Errorf("Never: %s; want nothing", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("Never: %q; want an error saying %q", got, c.want)
			}
		})
	}
}
