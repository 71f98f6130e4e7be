package labtest

import (
	"strings"
	"testing"
	"time"
)

// probed is a stopped prober with the given tries, every interval from its start: each
// try is (took, answered, retried).
func probed(interval time.Duration, tries ...try) *Prober {
	start := time.Unix(1000, 0)
	p := &Prober{stop: make(chan struct{}), start: start}
	at := start
	for _, tr := range tries {
		sent := at.Add(interval)
		took := tr.at.Sub(tr.sent)
		tr.sent, tr.at = sent, sent.Add(took)
		p.tries = append(p.tries, tr)
		at = tr.at
	}
	p.end = at.Add(interval)
	return p
}

// answered is a try that took d and was answered, retried or not.
func answered(d time.Duration, retried bool) try {
	return try{sent: time.Unix(0, 0), at: time.Unix(0, 0).Add(d), answered: true, retried: retried}
}

func failed(d time.Duration) try {
	return try{sent: time.Unix(0, 0), at: time.Unix(0, 0).Add(d)}
}

// TestRodeOutBoundsTheGapARetryHides: 100 GETs every 50 ms, all answered, one of them
// after a retry that took 1.5 s (an outage of 1.5 s, each try of it given up late) —
// "none lost, at most one in 50 retried" let it pass; the gap bound does not.
func TestRodeOutBoundsTheGapARetryHides(t *testing.T) {
	var tries []try
	for i := range 100 {
		if i == 40 {
			tries = append(tries, answered(1500*time.Millisecond, true))
			continue
		}
		tries = append(tries, answered(5*time.Millisecond, false))
	}
	p := probed(50*time.Millisecond, tries...)
	err := p.RodeOut(50, time.Second)
	if err == nil || !strings.Contains(err.Error(), "without an answer") {
		t.Errorf("RodeOut = %v, want the 1.5 s without an answer named", err)
	}
	if err := p.RodeOut(50, 2*time.Second); err != nil {
		t.Errorf("RodeOut with a 2 s bound = %v, want nil: every try answered, 1 of 100 retried", err)
	}
}

// TestRodeOutBoundsASerialProbersSilence: a serial prober whose failures take a second
// and answers 0.1 s: 6 failures in a row among 60 tries is 10 % lost but 6 s silent.
func TestRodeOutBoundsASerialProbersSilence(t *testing.T) {
	var tries []try
	for i := range 60 {
		if i >= 20 && i < 26 {
			tries = append(tries, failed(time.Second))
			continue
		}
		tries = append(tries, answered(100*time.Millisecond, false))
	}
	p := probed(0, tries...)
	if gap := p.Gap(); gap < 6*time.Second {
		t.Fatalf("the test's own premise: gap %s, want over 6 s", gap)
	}
	// TestStraitDNSRestart's check: a 10 % share of failures passes, the silence does not.
	if err := p.GapWithin(3 * time.Second); err == nil {
		t.Errorf("GapWithin(3s) = nil over %s of silence", p.Gap())
	}
	err := p.RodeOut(50, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "without an answer") || !strings.Contains(err.Error(), "54 of 60 answered") {
		t.Errorf("RodeOut = %v, want both the lost tries and the silence named", err)
	}
}

func TestRodeOutPassesARiddenOutFault(t *testing.T) {
	var tries []try
	for range 300 {
		tries = append(tries, answered(10*time.Millisecond, false))
	}
	if err := probed(50*time.Millisecond, tries...).RodeOut(50, time.Second); err != nil {
		t.Errorf("RodeOut = %v, want nil", err)
	}
}

// TestResumedIsBetweenTheLastMissAndTheFirstAnswer: tries every 50 ms, a fault after the
// first; the path came back after the send of the last try that failed after the fault
// and by the first answer; a try sent before the fault counts for neither.
func TestResumedIsBetweenTheLastMissAndTheFirstAnswer(t *testing.T) {
	p := probed(50*time.Millisecond, answered(5*time.Millisecond, false), failed(300*time.Millisecond),
		failed(300*time.Millisecond), answered(5*time.Millisecond, false), answered(5*time.Millisecond, false))
	fault := p.tries[0].at
	lo, hi, ok := p.Resumed(fault)
	if !ok || !lo.Equal(p.tries[2].sent) || !hi.Equal(p.tries[3].at) {
		t.Errorf("Resumed = %v, %v, %v; want the third try's send and the fourth's answer (%v, %v)", lo, hi, ok, p.tries[2].sent, p.tries[3].at)
	}
	if lo, _, ok := p.Resumed(p.tries[3].sent); !ok || !lo.Equal(p.tries[3].sent) {
		t.Errorf("Resumed from an answered try's send = %v, %v; want that moment itself", lo, ok)
	}
	if _, _, ok := p.Resumed(p.end); ok {
		t.Error("Resumed after the last try: ok, want no answer")
	}
}
