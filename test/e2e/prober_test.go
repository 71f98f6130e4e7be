package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// prober tries something (a GET, a lookup) at a fixed interval and keeps every try:
// when it was sent, when it ended and whether it was answered. A fault test measures
// from the moment it injected its fault, counting only the tries sent after it: an
// answer to a try sent before the fault says nothing about the path after it, and
// measuring from the first answer instead would hide the outage's start.
type prober struct {
	stop chan struct{}
	done sync.WaitGroup

	mu         sync.Mutex
	start, end time.Time // end: when it stopped (zero while it runs)
	tries      []try
}

// try is one attempt of a prober.
type try struct {
	sent, at time.Time
	answered bool
	// retried: the first attempt failed and the try was made again at once (a prober
	// that retries).
	retried bool
}

// startProber GETs a whereami from a pod every 50 ms (each try gives up after 300 ms).
func startProber(ns, hostPort string) *prober {
	return startProbing(50*time.Millisecond, getWhereami(ns, hostPort))
}

// getWhereami is one GET of a whereami from a pod, given up after 300 ms.
func getWhereami(ns, hostPort string) func() error {
	return func() error {
		_, err := labtest.TryWhereamiWithin(ns, hostPort, 300*time.Millisecond)
		return err
	}
}

// retryOnce makes a try that fails once again at once, as a client's retry would, and
// says whether it had to: on this shared two-core machine a GET now and then misses its
// 300 ms (another test's build, the kubelets) although nothing is down, while an outage
// fails the retry too. A test that retries counts the retries and bounds them.
func retryOnce(do func() error) func() (retried bool, err error) {
	return func() (bool, error) {
		if err := do(); err == nil {
			return false, nil
		}
		return true, do()
	}
}

// startProbing makes do every interval.
func startProbing(every time.Duration, do func() error) *prober {
	return startRetrying(every, func() (bool, error) { return false, do() })
}

// startRetrying makes do every interval; do says whether it retried (retryOnce).
func startRetrying(every time.Duration, do func() (retried bool, err error)) *prober {
	p := &prober{stop: make(chan struct{}), start: time.Now()}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(every):
			}
			sent := time.Now()
			retried, err := do()
			p.mu.Lock()
			p.tries = append(p.tries, try{sent: sent, at: time.Now(), answered: err == nil, retried: retried})
			p.mu.Unlock()
		}
	}()
	return p
}

// stopProbing stops the prober (again: nothing) and waits for its last try.
func (p *prober) stopProbing() {
	p.mu.Lock()
	running := p.end.IsZero()
	p.mu.Unlock()
	if !running {
		return
	}
	close(p.stop)
	p.done.Wait()
	p.mu.Lock()
	p.end = time.Now()
	p.mu.Unlock()
}

// answeredAfter says whether a try sent at or after t was answered.
func (p *prober) answeredAfter(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.tries {
		if tr.answered && !tr.sent.Before(t) {
			return true
		}
	}
	return false
}

// waitAnswered waits up to timeout for an answer to a try sent at or after fault and
// says whether one came.
func (p *prober) waitAnswered(fault time.Time, timeout time.Duration) bool {
	_, err := require.Within(timeout, func() error {
		if !p.answeredAfter(fault) {
			return fmt.Errorf("no answer since %s", fault.Format("15:04:05.000"))
		}
		return nil
	})
	return err == nil
}

// counts are the tries and the answers so far.
func (p *prober) counts() (tries, answers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.tries {
		if tr.answered {
			answers++
		}
	}
	return len(p.tries), answers
}

// retries is how many tries were made again at once (retryOnce), answered or not.
func (p *prober) retries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, tr := range p.tries {
		if tr.retried {
			n++
		}
	}
	return n
}

// gap stops the prober and returns the longest time without an answer from its start
// to its end.
func (p *prober) gap() time.Duration {
	from, to := p.longest()
	return to.Sub(from)
}

// longest stops the prober and says when its longest time without an answer began (its
// start or an answer) and ended (an answer or its end), for a failing test to match
// with logs.
func (p *prober) longest() (from, to time.Time) {
	p.stopProbing()
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.start
	from, to = last, last
	for _, tr := range p.tries {
		if !tr.answered {
			continue
		}
		if tr.at.Sub(last) > to.Sub(from) {
			from, to = last, tr.at
		}
		last = tr.at
	}
	if p.end.Sub(last) > to.Sub(from) {
		from, to = last, p.end
	}
	return from, to
}

// outage is what a prober saw from a fault on, counting only the tries sent at or
// after it.
type outage struct {
	// resumed is the time from the fault to the first answer; without one, to the end
	// of probing (answered false).
	resumed  time.Duration
	answered bool
	// after is the longest time without an answer after the first one: between two
	// answers, or from the last answer to the end of probing.
	after time.Duration
	// longest is the longest time without an answer from the fault on: resumed or
	// after.
	longest        time.Duration
	tries, answers int
}

func (o outage) String() string {
	first := fmt.Sprintf("first answer %s after the fault", o.resumed.Round(time.Millisecond))
	if !o.answered {
		first = fmt.Sprintf("no answer in the %s after the fault", o.resumed.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s, longest time without an answer %s (%s after the first answer), %d of %d tries answered",
		first, o.longest.Round(time.Millisecond), o.after.Round(time.Millisecond), o.answers, o.tries)
}

// since stops the prober and measures the outage from fault, the moment the test
// injected it.
func (p *prober) since(fault time.Time) outage {
	p.stopProbing()
	p.mu.Lock()
	defer p.mu.Unlock()
	var o outage
	last := fault
	for _, tr := range p.tries {
		if tr.sent.Before(fault) {
			continue
		}
		o.tries++
		if !tr.answered {
			continue
		}
		o.answers++
		if !o.answered {
			o.answered, o.resumed = true, tr.at.Sub(fault)
		} else {
			o.after = max(o.after, tr.at.Sub(last))
		}
		last = tr.at
	}
	if o.answered {
		o.after = max(o.after, p.end.Sub(last))
	} else {
		o.resumed = p.end.Sub(fault)
	}
	o.longest = max(o.resumed, o.after)
	return o
}

// boundOutage fails the test when the outage since a fault was longer than bound: the
// time to the first answer and every later time without one.
func boundOutage(t testing.TB, what string, o outage, bound time.Duration) bool {
	t.Helper()
	if o.answered && o.longest <= bound {
		return true
	}
	t.Errorf("%s: %s; the bound is %s from the fault", what, o, bound)
	return false
}
