package benchcite

import (
	"fmt"
	"regexp"
	"strings"
)

// Cite is one footnote reference on a page and the figures just before it.
type Cite struct {
	Line    int
	Label   string
	Figures []string // as the page writes them, thousands separators dropped
	// Units are the figures' units as the page writes them ("ms", "CPU-s per GB"), ""
	// where none is; a figure without one takes the next figure's ("1.104–1.129 s").
	Units []string
	Text  string // the page's line, which may name what the figures are
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
	// itemUnit is one figure and the unit word after it, if any.
	itemUnit  = regexp.MustCompile(`(` + number + `)(?:\s?(` + unit + `))?`)
	thousands = regexp.MustCompile(`(\d),(\d{3})\b`)
)

const (
	number = `(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`
	unit   = `[A-Za-zµ%][A-Za-zµ%/\-]*(?:\s+per\s+[A-Za-z]+)?`
	item   = number + `(?:\s?` + unit + `)?`
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
			figs, units, err := figures(line[from:r[0]])
			from = r[1]
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: [^%s]: %w", n, label, err))
				continue
			}
			p.Cites = append(p.Cites, Cite{Line: n, Label: label, Figures: figs, Units: units, Text: line})
		}
	}
	return p, errs
}

// figures are the numbers that end text (the text between the previous reference, or
// the line's start, and this one), and their units.
func figures(text string) (figs, units []string, err error) {
	text = strings.ReplaceAll(text, "**", "") // a figure in bold is the same figure
	loc := group.FindStringIndex(text)
	if loc == nil {
		return nil, nil, fmt.Errorf("no figure just before it (in %q)", tail(text))
	}
	if s := loc[0]; s > 0 && isWordChar(text[s-1]) {
		return nil, nil, fmt.Errorf("the figure before it is glued to a word (in %q)", tail(text))
	}
	for _, m := range itemUnit.FindAllStringSubmatch(text[loc[0]:loc[1]], -1) {
		u := m[2]
		if u == "to" || u == "and" {
			u = "" // a separator, "1.104 to 1.129 s"
		}
		figs = append(figs, strings.ReplaceAll(m[1], ",", ""))
		units = append(units, u)
	}
	for i := len(units) - 2; i >= 0; i-- {
		if units[i] == "" {
			units[i] = units[i+1]
		}
	}
	return figs, units, nil
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
