package benchcpu

import (
	"testing"
	"time"
)

// spin burns about d of CPU time.
func spin(d time.Duration) {
	for start := Used(); Used()-start < d; {
	}
}

// A loop that burns 2 ms of CPU an op in its paused part and 2 ms in its timed part,
// then sleeps 1 ms, reports about 2 ms: neither the paused part nor the sleep counts.
func TestMeterCountsTheTimedPartsCPUTime(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		m := Start(b)
		for i := 0; i < b.N; i++ {
			m.Pause()
			b.StopTimer()
			spin(2 * time.Millisecond)
			b.StartTimer()
			m.Resume()
			spin(2 * time.Millisecond)
			time.Sleep(time.Millisecond)
		}
		m.Report()
	})
	got := time.Duration(r.Extra[Unit])
	if got < 1800*time.Microsecond || got > 3*time.Millisecond {
		t.Errorf("%s = %s over %d ops, want about 2ms", Unit, got, r.N)
	}
}

// A loop whose op is one round of the reference work reads about as many cpu-ref/op as
// the round has units, whatever the machine's speed that day; and the round allocates
// nothing, so a benchmark's heap (which the collector would mark) does not slow it.
func TestALoopOfTheReferenceReadsItsUnits(t *testing.T) {
	r := newReference()
	if a := testing.AllocsPerRun(10, func() { r.round() }); a != 0 {
		t.Errorf("a round of the reference allocates %v times", a)
	}
	res := testing.Benchmark(func(b *testing.B) {
		m := Start(b)
		for i := 0; i < b.N; i++ {
			r.round()
		}
		m.Report()
	})
	got := res.Extra[RefUnit]
	if got < 0.7*refKeys || got > 1.3*refKeys {
		t.Errorf("%s = %v for a round of %d units, want about %d", RefUnit, got, refKeys, refKeys)
	}
}
