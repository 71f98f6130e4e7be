package benchcite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPerformancePagesCiteTheirRuns: every figure docs/performance*.md cites with a
// footnote is in the run's output under docs/bench/ that the footnote links, and the
// pages cite at least one run (a page that drops every footnote fails here too).
func TestPerformancePagesCiteTheirRuns(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	pages, err := filepath.Glob(filepath.Join(docs, "performance*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/performance*.md: %v", err)
	}
	cited := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := ParsePage(string(text))
		cited += len(p.Cites)
		for _, err := range Check(string(text), func(path string) (string, error) {
			out, err := os.ReadFile(filepath.Join(docs, filepath.FromSlash(path)))
			return string(out), err
		}) {
			t.Errorf("%s: %v", filepath.Base(page), err)
		}
	}
	if cited == 0 {
		t.Error("no page of docs/performance*.md cites a run under docs/bench/")
	}
}
