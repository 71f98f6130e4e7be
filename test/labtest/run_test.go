package labtest

import (
	"regexp"
	"runtime"
	"testing"
	"time"
)

func TestStampWriterStampsEachLineOnce(t *testing.T) {
	w := &stampWriter{}
	for _, s := range []string{"… reading", " 2 clusters\n… probing\n", "", "done\nlast"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if got, want := w.text(), "… reading 2 clusters\n… probing\ndone\nlast"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	stamped := regexp.MustCompile(`^\[ *\d+\.\ds\] … reading 2 clusters\n\[ *\d+\.\ds\] … probing\n\[ *\d+\.\ds\] done\n\[ *\d+\.\ds\] last$`)
	if got := w.stampedText(); !stamped.MatchString(got) {
		t.Errorf("stamped %q: want every line, and only its start, stamped", got)
	}
}

// A command past its timeout is killed with its children: a child holding the output
// open does not keep Run waiting.
func TestRunKillsTheCommandsChildrenAtTheTimeout(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ft, 300*time.Millisecond, "sh", "-c", "sleep 30 & sleep 30")
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Run still waiting 15 s after a 300 ms timeout")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run returned %s after a 300 ms timeout, want the children killed with the command", took)
	}
	if !ft.fatal {
		t.Error("Run did not fail at the timeout")
	}
}

// fatalRecorder records a Fatalf and ends the goroutine, as testing.T does.
type fatalRecorder struct {
	testing.TB
	fatal bool
}

func (f *fatalRecorder) Fatalf(string, ...any) {
	f.fatal = true
	runtime.Goexit()
}

func (f *fatalRecorder) Helper() {}
