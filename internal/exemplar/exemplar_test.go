package exemplar

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestFitKeepsTheEndWithinTheLimit(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("é", 60) + "-tail"
	got := Fit("export", long)
	if n := utf8.RuneCountInString("export") + utf8.RuneCountInString(got); n != prometheus.ExemplarMaxRunes {
		t.Errorf("Fit: %d runes with the name, want %d", n, prometheus.ExemplarMaxRunes)
	}
	if !strings.HasSuffix(got, "-tail") || !utf8.ValidString(got) {
		t.Errorf("Fit(%q) = %q: want a valid end of it", long, got)
	}
	if got := Fit("export", "sample/whereami"); got != "sample/whereami" {
		t.Errorf("a short value changed: %q", got)
	}
}

// A histogram observed with an exemplar whose value alone is at the limit does not
// panic, and keeps the exemplar on the bucket the value fell in.
func TestObserveAttachesTheExemplar(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Buckets: []float64{0.1, 1}})
	Observe(h, 0.5, "export", strings.Repeat("x", 200))
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	b := m.GetHistogram().GetBucket()[1]
	ex := b.GetExemplar()
	if ex == nil || ex.GetValue() != 0.5 || len(ex.GetLabel()) != 1 || ex.GetLabel()[0].GetName() != "export" {
		t.Fatalf("bucket le=1: exemplar %v, want export=… 0.5", ex)
	}
}
