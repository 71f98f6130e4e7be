package nldump

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRetry(t *testing.T) {
	other := errors.New("permission denied")
	for _, tc := range []struct {
		name      string
		results   []error // what each call returns, in order
		wantCalls int
		wantErr   error
	}{
		{"a dump that completes", []error{nil}, 1, nil},
		{"interrupted twice, then complete", []error{netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, nil}, 3, nil},
		{"another error is not retried", []error{other}, 1, other},
		{"a table that never settles", []error{netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted,
			netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, netlink.ErrDumpInterrupted, nil}, attempts, netlink.ErrDumpInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := Retry(func() (int, error) {
				calls++
				return calls, tc.results[calls-1]
			})
			if calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if got != calls {
				t.Errorf("returned the result of call %d, want the last (%d)", got, calls)
			}
		})
	}
}
