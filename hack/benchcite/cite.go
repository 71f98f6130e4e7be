package benchcite

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Cite is one footnote reference on a page and the figures just before it.
type Cite struct {
	Line    int
	Label   string
	Figures []string // as the page writes them, thousands separators dropped
}

// Page is what a page cites: its references, and per footnote label the file it links
// (relative to the page's folder, "bench/bench-lab.txt").
type Page struct {
	Cites []Cite
	Files map[string]string // "" for a footnote that links no such file (an error)
}

var (
	// ref is a footnote reference; a definition is the same at a line's start with ':'.
	ref = regexp.MustCompile(`\[\^([\w-]+)\]`)
	def = regexp.MustCompile(`^\[\^([\w-]+)\]:\s*(.*)$`)
	// benchLink is a Markdown link to a file under bench/ (the page lives in docs/).
	benchLink = regexp.MustCompile(`\]\((bench/[^)\s]+)\)`)
	// group is the figures that end a text: numbers (10,000 or 0.1307) each with an
	// optional unit word, joined by separators, up to the text's end.
	group = regexp.MustCompile(`(?:` + item + `)(?:` + sep + `(?:` + item + `))*\s*$`)
	num   = regexp.MustCompile(number)
	// fileNumber is a number anywhere in a run's output, glued to a unit or not
	// ("1.106s", "1120 ms-gap-crash", "5.727e+03").
	fileNumber = regexp.MustCompile(`\d+(?:\.\d+)?(?:[eE][+-]?\d+)?`)
	thousands  = regexp.MustCompile(`(\d),(\d{3})\b`)
)

const (
	number = `(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`
	item   = number + `(?:\s?[A-Za-zµ%][A-Za-zµ%/\-]*(?:\s+per\s+[A-Za-z]+)?)?`
	sep    = `(?:\s*[,–/;]\s*|\s+(?:to|and)\s+)`
)

// ParsePage reads a page's footnote references, outside code blocks, and its footnote
// definitions. Errors name the line and what is wrong with it.
func ParsePage(text string) (Page, []error) {
	p := Page{Files: map[string]string{}}
	var errs []error
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := def.FindStringSubmatch(line); m != nil {
			l := benchLink.FindStringSubmatch(m[2])
			if l == nil {
				errs = append(errs, fmt.Errorf("line %d: footnote [^%s] links no file under bench/ (want [docs/bench/<file>](bench/<file>))", n, m[1]))
				p.Files[m[1]] = "" // defined: its references are not reported again
				continue
			}
			if old, ok := p.Files[m[1]]; ok {
				errs = append(errs, fmt.Errorf("line %d: footnote [^%s] defined twice (%s, %s)", n, m[1], old, l[1]))
			}
			p.Files[m[1]] = l[1]
			continue
		}
		from := 0
		for _, r := range ref.FindAllStringSubmatchIndex(line, -1) {
			label := line[r[2]:r[3]]
			figs, err := figures(line[from:r[0]])
			from = r[1]
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: [^%s]: %w", n, label, err))
				continue
			}
			p.Cites = append(p.Cites, Cite{Line: n, Label: label, Figures: figs})
		}
	}
	return p, errs
}

// figures are the numbers that end text (the text between the previous reference, or
// the line's start, and this one).
func figures(text string) ([]string, error) {
	text = strings.ReplaceAll(text, "**", "") // a figure in bold is the same figure
	loc := group.FindStringIndex(text)
	if loc == nil {
		return nil, fmt.Errorf("no figure just before it (in %q)", tail(text))
	}
	if s := loc[0]; s > 0 && isWordChar(text[s-1]) {
		return nil, fmt.Errorf("the figure before it is glued to a word (in %q)", tail(text))
	}
	var out []string
	for _, f := range num.FindAllString(text[loc[0]:loc[1]], -1) {
		out = append(out, strings.ReplaceAll(f, ",", ""))
	}
	return out, nil
}

func isWordChar(c byte) bool {
	return c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func tail(s string) string {
	if len(s) > 40 {
		return "…" + s[len(s)-40:]
	}
	return s
}

// Numbers are the numbers of a run's output, for Appears.
type Numbers struct {
	text   map[string]bool
	values []float64
}

// NumbersOf reads every number out of a run's output.
func NumbersOf(output string) Numbers {
	ns := Numbers{text: map[string]bool{}}
	for _, f := range fileNumber.FindAllString(thousands.ReplaceAllString(output, "$1$2"), -1) {
		if ns.text[f] {
			continue
		}
		ns.text[f] = true
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			ns.values = append(ns.values, v)
		}
	}
	return ns
}

// Appears reports whether figure is one of the run's numbers, as written or rounded to
// the figure's decimals (0.158 for 0.1584, 1120 for 1120.4, 0.20 for 0.2).
func (ns Numbers) Appears(figure string) bool {
	if ns.text[figure] {
		return true
	}
	decimals := 0
	if i := strings.IndexByte(figure, '.'); i >= 0 {
		decimals = len(figure) - i - 1
	}
	for _, v := range ns.values {
		if strconv.FormatFloat(v, 'f', decimals, 64) == figure {
			return true
		}
	}
	return false
}

// Check checks one page: every reference has a footnote, every footnote links a run's
// output that read returns (path relative to the page's folder), is used, and every
// cited figure appears in the output its footnote links.
func Check(text string, read func(path string) (string, error)) []error {
	p, errs := ParsePage(text)
	outputs := map[string]Numbers{}
	used := map[string]bool{}
	for _, label := range slices.Sorted(maps.Keys(p.Files)) {
		path := p.Files[label]
		if path == "" {
			continue
		}
		out, err := read(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("footnote [^%s]: %w", label, err))
			continue
		}
		if strings.TrimSpace(out) == "" {
			errs = append(errs, fmt.Errorf("footnote [^%s]: %s is empty", label, path))
			continue
		}
		outputs[label] = NumbersOf(out)
	}
	for _, c := range p.Cites {
		used[c.Label] = true
		path, ok := p.Files[c.Label]
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: [^%s] has no footnote ([^%s]: [docs/bench/<file>](bench/<file>))", c.Line, c.Label, c.Label))
			continue
		}
		ns, ok := outputs[c.Label]
		if !ok {
			continue // its file's error is reported once above
		}
		for _, f := range c.Figures {
			if !ns.Appears(f) {
				errs = append(errs, fmt.Errorf("line %d: %s is not in %s (cited as [^%s])", c.Line, f, path, c.Label))
			}
		}
	}
	for _, label := range slices.Sorted(maps.Keys(p.Files)) {
		if !used[label] {
			errs = append(errs, fmt.Errorf("footnote [^%s] (%s) is cited nowhere on the page", label, p.Files[label]))
		}
	}
	return errs
}
