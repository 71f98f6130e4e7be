package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Unit is the metric's unit.
const Unit = "cpu-ns/op"

// Meter counts the process's CPU time while it runs; a benchmark pauses it where it
// stops its timer.
type Meter struct {
	b       *testing.B
	ref     *reference
	before  time.Duration // the reference's unit at Start
	total   time.Duration
	started time.Duration
	running bool
}

// Start starts a Meter: call it where the timed loop begins (after b.ResetTimer), and
// Report after the loop. It measures the reference work first, outside the timer.
func Start(b *testing.B) *Meter {
	m := &Meter{b: b, ref: newReference()}
	b.StopTimer()
	m.before = m.ref.measure()
	b.StartTimer()
	m.Resume()
	return m
}

// Pause stops counting, beside b.StopTimer.
func (m *Meter) Pause() {
	if m.running {
		m.total += Used() - m.started
		m.running = false
	}
}

// Resume counts again, beside b.StartTimer.
func (m *Meter) Resume() {
	if !m.running {
		m.started = Used()
		m.running = true
	}
}

// Report stops the Meter and reports its time per op as cpu-ns/op, and as cpu-ref/op
// against the reference work measured now, outside the timer.
func (m *Meter) Report() {
	m.Pause()
	if m.b.N == 0 {
		return
	}
	perOp := float64(m.total.Nanoseconds()) / float64(m.b.N)
	m.b.ReportMetric(perOp, Unit)
	// The reference's unit before and after the loop, outside the timer: the machine's
	// speed while the loop ran.
	m.b.StopTimer()
	unit := (m.before + m.ref.measure()) / 2
	m.b.ReportMetric(perOp/float64(unit.Nanoseconds()), RefUnit)
}

// Used is the CPU time the process has used so far, user and system.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
