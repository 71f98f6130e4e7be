package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string                   `json:"title"`
	Type    string                   `json:"type"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// series is one line of a panel.
type series struct {
	name   string
	points []model.SamplePair
}

// recording is what the queries of a dashboard answered over a range: dashshot -record
// writes it, -replay draws from it, so that a picture can be made again, byte for byte,
// without the Prometheus it came from.
type recording struct {
	End   time.Time `json:"end"`
	Range string    `json:"range"`
	// Queries are each query's series, by its expression.
	Queries map[string][]recordedSeries `json:"queries"`
}

type recordedSeries struct {
	Metric model.Metric       `json:"metric"`
	Points []model.SamplePair `json:"points"`
}

func main() {
	url := flag.String("prometheus", "", "the Prometheus to query (the hub's)")
	span := flag.Duration("range", 30*time.Minute, "how far back the time series reach")
	record := flag.String("record", "", "also write what the queries answered to this file (JSON), for -replay")
	replay := flag.String("replay", "", "draw from this recording instead of a Prometheus")
	flag.Parse()
	if (*url == "") == (*replay == "") || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dashshot -prometheus URL [-range 30m] [-record data.json] DASHBOARD.json > picture.svg\n       dashshot -replay data.json DASHBOARD.json > picture.svg")
		os.Exit(2)
	}
	if err := run(*url, *replay, *record, flag.Arg(0), *span, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(1)
	}
}

// run draws the dashboard in file from the Prometheus at url over span, or from the
// recording replay, and writes what it drew from to record when that is set.
func run(url, replay, record, file string, span time.Duration, w io.Writer) error {
	d, err := readDashboard(file)
	if err != nil {
		return err
	}
	var rec *recording
	if replay != "" {
		rec, err = readRecording(replay)
	} else {
		rec, err = query(url, d, span)
	}
	if err != nil {
		return err
	}
	if record != "" {
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := os.WriteFile(record, append(data, '\n'), 0o644); err != nil { //nolint:gosec // a picture's data, read by everyone
			return err
		}
	}
	return drawRecording(w, d, rec)
}

func readDashboard(file string) (dashboard, error) {
	var d dashboard
	data, err := os.ReadFile(file)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", file, err)
	}
	return d, nil
}

func readRecording(file string) (*recording, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	rec := &recording{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return rec, nil
}

// query asks the Prometheus at url each of d's queries over the span up to now.
func query(url string, d dashboard, span time.Duration) (*recording, error) {
	c, err := promapi.NewClient(promapi.Config{Address: url})
	if err != nil {
		return nil, err
	}
	api := promv1.NewAPI(c)
	end := time.Now().UTC().Truncate(time.Second)
	rec := &recording{End: end, Range: span.String(), Queries: map[string][]recordedSeries{}}
	rng := promv1.Range{Start: end.Add(-span), End: end, Step: span / 120}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			v, _, _, err := api.QueryRange(ctx, t.Expr, rng)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("panel %q: %s: %w", p.Title, t.Expr, err)
			}
			m, _ := v.(model.Matrix)
			out := []recordedSeries{}
			for _, s := range m {
				out = append(out, recordedSeries{Metric: s.Metric, Points: s.Values})
			}
			rec.Queries[t.Expr] = out
		}
	}
	return rec, nil
}

// drawRecording draws d from what rec holds of each of its queries; a query rec does
// not hold (a dashboard changed since the recording) is an error: record again.
func drawRecording(w io.Writer, d dashboard, rec *recording) error {
	lines := map[int][]series{}
	for i, p := range d.Panels {
		for _, t := range p.Targets {
			got, ok := rec.Queries[t.Expr]
			if !ok {
				return fmt.Errorf("panel %q: the recording has no answer to %s: record it again from a Prometheus (make dashboard-picture)", p.Title, t.Expr)
			}
			for _, s := range got {
				lines[i] = append(lines[i], series{name: legend(t.LegendFormat, s.Metric), points: s.Points})
			}
		}
	}
	return draw(w, d, lines, rec.End)
}

var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// legend is Grafana's legend format filled in from m.
func legend(format string, m model.Metric) string {
	if format == "" {
		return m.String()
	}
	return legendLabel.ReplaceAllStringFunc(format, func(s string) string {
		return string(m[model.LabelName(legendLabel.FindStringSubmatch(s)[1])])
	})
}

// The picture's grid: Grafana's 24 columns, rows of 30 px.
const (
	colWidth  = 50
	rowHeight = 30
	pad       = 8
)

var palette = []string{"#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0"}

func draw(w io.Writer, d dashboard, lines map[int][]series, at time.Time) error {
	height := 0
	for _, p := range d.Panels {
		height = max(height, (p.GridPos.Y+p.GridPos.H)*rowHeight)
	}
	width := 24 * colWidth
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#111217"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" fill="#d8d9da" font-size="16">%s — %s</text>`+"\n", pad, esc(d.Title), at.UTC().Format("2006-01-02 15:04 UTC"))
	for i, p := range d.Panels {
		x, y := p.GridPos.X*colWidth+pad/2, p.GridPos.Y*rowHeight+40
		pw, ph := p.GridPos.W*colWidth-pad, p.GridPos.H*rowHeight-pad
		if p.Type == "row" {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#d8d9da" font-size="13" font-weight="bold">%s</text>`+"\n", x, y+18, esc(p.Title))
			continue
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#181b1f" stroke="#2c3235"/>`+"\n", x, y, pw, ph)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#ccccdc" font-weight="bold">%s</text>`+"\n", x+6, y+15, esc(p.Title))
		ss := lines[i]
		sort.Slice(ss, func(a, b int) bool { return ss[a].name < ss[b].name })
		if len(ss) == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#8e8e8e">No data</text>`+"\n", x+pw/2-20, y+ph/2)
			continue
		}
		if p.Type == "stat" {
			drawStat(&b, ss, p.FieldConfig.Defaults.Unit, x, y, pw, ph)
			continue
		}
		drawLines(&b, ss, p.FieldConfig.Defaults.Unit, x, y, pw, ph)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawStat(b *strings.Builder, ss []series, unit string, x, y, pw, ph int) {
	n := len(ss)
	for k, s := range ss {
		last := s.points[len(s.points)-1].Value
		cx := x + pw*(2*k+1)/(2*n)
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="%s" font-size="26" text-anchor="middle">%s</text>`+"\n", cx, y+ph/2+8, palette[k%len(palette)], esc(format(float64(last), unit)))
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="middle">%s</text>`+"\n", cx, y+ph-8, esc(s.name))
	}
}

func drawLines(b *strings.Builder, ss []series, unit string, x, y, pw, ph int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	var t0, t1 model.Time
	for _, s := range ss {
		for _, p := range s.points {
			v := float64(p.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			if t0 == 0 || p.Timestamp < t0 {
				t0 = p.Timestamp
			}
			t1 = max(t1, p.Timestamp)
		}
	}
	if math.IsInf(lo, 1) {
		return
	}
	lo = math.Min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	legendRows := min(len(ss), 3)
	top, left, bottom := y+24, x+56, y+ph-14*legendRows-8
	right := x + pw - 8
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="end">%s</text>`+"\n", left-4, top+8, esc(format(hi, unit)))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="end">%s</text>`+"\n", left-4, bottom, esc(format(lo, unit)))
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#2c3235"/>`+"\n", left, bottom, right, bottom)
	span := float64(t1 - t0)
	if span <= 0 {
		span = 1
	}
	for k, s := range ss {
		var pts []string
		for _, p := range s.points {
			v := float64(p.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			px := float64(left) + float64(right-left)*float64(p.Timestamp-t0)/span
			py := float64(bottom) - float64(bottom-top)*(v-lo)/(hi-lo)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		}
		color := palette[k%len(palette)]
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		if k < legendRows {
			ly := bottom + 14*(k+1) + 2
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/><text x="%d" y="%d" fill="#ccccdc">%s</text>`+"\n", x+8, ly-4, color, x+22, ly, esc(s.name))
		}
	}
	if len(ss) > legendRows {
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="end">+%d more</text>`+"\n", right, y+ph-8, len(ss)-legendRows)
	}
}

// format is a value in the panel's unit, shortly.
func format(v float64, unit string) string {
	switch unit {
	case "s":
		if v != 0 && math.Abs(v) < 0.001 {
			return fmt.Sprintf("%.0f µs", v*1e6)
		}
		if math.Abs(v) < 1 {
			return fmt.Sprintf("%.0f ms", v*1000)
		}
		return fmt.Sprintf("%.2f s", v)
	case "percentunit":
		return fmt.Sprintf("%.1f%%", v*100)
	case "Bps":
		return fmt.Sprintf("%.0f B/s", v)
	case "reqps", "ops":
		return fmt.Sprintf("%.2f/s", v)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string { return html.EscapeString(s) }
