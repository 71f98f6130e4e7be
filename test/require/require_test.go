package require

import (
	"errors"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheCheckPasses(t *testing.T) {
	calls := 0
	took := Eventually(t, time.Second, "third call", func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("check called %d times, want 3", calls)
	}
	if took < 2*pollInterval {
		t.Errorf("took %v, want at least two poll intervals", took)
	}
}

// Under CI a missing prerequisite fails the package instead of skipping it.
func TestMainSkipFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	if code := MainSkip("no %s", "thing"); code != 1 {
		t.Errorf("under CI: exit code %d, want 1", code)
	}
	t.Setenv("CI", "")
	if code := MainSkip("no %s", "thing"); code != 0 {
		t.Errorf("without CI: exit code %d, want 0", code)
	}
}
