package labtest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/straitnet/strait/test/require"
)

// Prober tries something (a GET, a lookup) at a fixed interval and keeps every try:
// when it was sent, when it ended and whether it was answered. A fault test measures
// from the moment it injected its fault, counting only the tries sent after it: an
// answer to a try sent before the fault says nothing about the path after it, and
// measuring from the first answer instead would hide the outage's start.
type Prober struct {
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

// StartProber GETs a whereami from a pod every 50 ms (each try gives up after 300 ms).
func StartProber(ns, hostPort string) *Prober {
	return StartProbing(50*time.Millisecond, GetWhereami(ns, hostPort))
}

// GetWhereami is one GET of a whereami from a pod, given up after 300 ms.
func GetWhereami(ns, hostPort string) func() error {
	return func() error {
		_, err := TryWhereamiWithin(ns, hostPort, 300*time.Millisecond)
		return err
	}
}

// RetryOnce makes a try that fails once again at once, as a client's retry would, and
// says whether it had to: on this shared two-core machine a GET now and then misses its
// 300 ms (another test's build, the kubelets) although nothing is down, while an outage
// fails the retry too. A test that retries counts the retries and bounds them.
func RetryOnce(do func() error) func() (retried bool, err error) {
	return func() (bool, error) {
		if err := do(); err == nil {
			return false, nil
		}
		return true, do()
	}
}

// StartProbing makes do every interval.
func StartProbing(every time.Duration, do func() error) *Prober {
	return StartRetrying(every, func() (bool, error) { return false, do() })
}

// StartRetrying makes do every interval; do says whether it retried (RetryOnce).
func StartRetrying(every time.Duration, do func() (retried bool, err error)) *Prober {
	p := &Prober{stop: make(chan struct{}), start: time.Now()}
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

// Stop stops the prober (again: nothing) and waits for its last try.
func (p *Prober) Stop() {
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

// Resumed is when the path came back after fault, as the tries can tell: after lo, the
// send of the last try sent after fault that went unanswered before the first answer
// (fault itself if none was), and by hi, that first answer. ok is false without one.
func (p *Prober) Resumed(fault time.Time) (lo, hi time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lo = fault
	for _, tr := range p.tries {
		switch {
		case tr.sent.Before(fault):
		case tr.answered:
			return lo, tr.at, true
		default:
			lo = tr.sent
		}
	}
	return lo, time.Time{}, false
}

// AnsweredAfter says whether a try sent at or after t was answered.
func (p *Prober) AnsweredAfter(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.tries {
		if tr.answered && !tr.sent.Before(t) {
			return true
		}
	}
	return false
}

// WaitAnswered waits up to timeout for an answer to a try sent at or after fault and
// says whether one came.
func (p *Prober) WaitAnswered(fault time.Time, timeout time.Duration) bool {
	_, err := require.Within(timeout, func() error {
		if !p.AnsweredAfter(fault) {
			return fmt.Errorf("no answer since %s", fault.Format("15:04:05.000"))
		}
		return nil
	})
	return err == nil
}

// Counts are the tries and the answers so far.
func (p *Prober) Counts() (tries, answers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.tries {
		if tr.answered {
			answers++
		}
	}
	return len(p.tries), answers
}

// Retries is how many tries were made again at once (RetryOnce), answered or not.
func (p *Prober) Retries() int {
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

// Gap stops the prober and returns the longest time without an answer from its start
// to its end.
func (p *Prober) Gap() time.Duration {
	from, to := p.Longest()
	return to.Sub(from)
}

// Longest stops the prober and says when its longest time without an answer began (its
// start or an answer) and ended (an answer or its end), for a failing test to match
// with logs.
func (p *Prober) Longest() (from, to time.Time) {
	p.Stop()
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

// Outage is what a prober saw from a fault on, counting only the tries sent at or
// after it.
type Outage struct {
	// Resumed is the time from the fault to the first answer; without one, to the end
	// of probing (Answered false).
	Resumed  time.Duration
	Answered bool
	// After is the longest time without an answer after the first one: between two
	// answers, or from the last answer to the end of probing.
	After time.Duration
	// Longest is the longest time without an answer from the fault on: Resumed or
	// After.
	Longest        time.Duration
	Tries, Answers int
}

func (o Outage) String() string {
	first := fmt.Sprintf("first answer %s after the fault", o.Resumed.Round(time.Millisecond))
	if !o.Answered {
		first = fmt.Sprintf("no answer in the %s after the fault", o.Resumed.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s, longest time without an answer %s (%s after the first answer), %d of %d tries answered",
		first, o.Longest.Round(time.Millisecond), o.After.Round(time.Millisecond), o.Answers, o.Tries)
}

// Since stops the prober and measures the outage from fault, the moment the test
// injected it.
func (p *Prober) Since(fault time.Time) Outage {
	p.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	var o Outage
	last := fault
	for _, tr := range p.tries {
		if tr.sent.Before(fault) {
			continue
		}
		o.Tries++
		if !tr.answered {
			continue
		}
		o.Answers++
		if !o.Answered {
			o.Answered, o.Resumed = true, tr.at.Sub(fault)
		} else {
			o.After = max(o.After, tr.at.Sub(last))
		}
		last = tr.at
	}
	if o.Answered {
		o.After = max(o.After, p.end.Sub(last))
	} else {
		o.Resumed = p.end.Sub(fault)
	}
	o.Longest = max(o.Resumed, o.After)
	return o
}

// BoundOutage fails the test when the outage since a fault was longer than bound: the
// time to the first answer and every later time without one.
func BoundOutage(t testing.TB, what string, o Outage, bound time.Duration) bool {
	t.Helper()
	if o.Answered && o.Longest <= bound {
		return true
	}
	t.Errorf("%s: %s; the bound is %s from the fault", what, o, bound)
	return false
}

// RodeOut says how a fault the data path should ride out was not ridden out, or nil:
// at least least tries, every one answered, at most one in 50 retried (RetryOnce: a
// retry covers this machine's noise, not an outage), and no stretch without an answer
// longer than maxGap. The gap bound is what makes "none lost" mean no outage: every
// allowed retry could otherwise hide up to a second of one, and a serial prober whose
// failures take longer than its answers can be silent for long with few failures.
func (p *Prober) RodeOut(least int, maxGap time.Duration) error {
	gap := p.GapWithin(maxGap)
	tries, answers := p.Counts()
	retries := p.Retries()
	var errs []string
	if tries < least || answers != tries || retries > tries/50 {
		errs = append(errs, fmt.Sprintf("%d of %d answered, %d retried; want all of at least %d, at most %d retried", answers, tries, retries, least, tries/50))
	}
	if gap != nil {
		errs = append(errs, gap.Error())
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// GapWithin stops the prober and says how its longest time without an answer exceeded
// bound (naming when it began and ended), or nil: a share of failed tries alone lets a
// serial prober, whose failures take longer than its answers, be silent for long.
func (p *Prober) GapWithin(bound time.Duration) error {
	from, to := p.Longest()
	if gap := to.Sub(from); gap > bound {
		return fmt.Errorf("%s without an answer (%s to %s), want at most %s", gap.Round(time.Millisecond),
			from.Format("15:04:05.000"), to.Format("15:04:05.000"), bound)
	}
	return nil
}
