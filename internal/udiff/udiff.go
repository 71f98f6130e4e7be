package udiff

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// contextLines is how many unchanged lines a hunk shows around a change, as diff -u.
const contextLines = 3

// maxCells bounds the table of the line diff: past it (two versions of a huge object,
// changed all over) the middle is shown as removed and added whole, which is still a
// correct diff, only not the shortest.
const maxCells = 4_000_000

type edit struct {
	op   byte // ' ', '-' or '+'
	line string
}

// Unified is the unified diff of two texts with the two header names, empty when
// they are equal. Either text may be empty: an object created or deleted.
func Unified(fromName, toName, from, to string) string {
	if from == to {
		return ""
	}
	edits := lineEdits(splitLines(from), splitLines(to))
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", fromName, toName)
	for _, h := range hunks(edits) {
		writeHunk(&b, edits, h)
	}
	return b.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineEdits is a shortest edit script from a to b: common head and tail, then a
// longest common subsequence of the middle.
func lineEdits(a, b []string) []edit {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []edit
	for _, l := range a[:head] {
		out = append(out, edit{' ', l})
	}
	out = append(out, middleEdits(a[head:len(a)-tail], b[head:len(b)-tail])...)
	for _, l := range a[len(a)-tail:] {
		out = append(out, edit{' ', l})
	}
	return out
}

func middleEdits(a, b []string) []edit {
	var out []edit
	if len(a)*len(b) > maxCells {
		for _, l := range a {
			out = append(out, edit{'-', l})
		}
		for _, l := range b {
			out = append(out, edit{'+', l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, edit{' ', a[i]})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i*w+j+1] >= lcs[(i+1)*w+j]):
			// Removals before additions within a change, as diff prints them.
			if i < len(a) && lcs[(i+1)*w+j] == lcs[i*w+j] {
				out = append(out, edit{'-', a[i]})
				i++
				continue
			}
			out = append(out, edit{'+', b[j]})
			j++
		default:
			out = append(out, edit{'-', a[i]})
			i++
		}
	}
	return out
}

// hunk is a range of edits [start, end) to print.
type hunk struct{ start, end int }

// hunks groups the changes with their context, merging changes whose contexts touch.
func hunks(edits []edit) []hunk {
	var out []hunk
	for i := 0; i < len(edits); i++ {
		if edits[i].op == ' ' {
			continue
		}
		start := max(0, i-contextLines)
		end := min(len(edits), i+1+contextLines)
		if n := len(out); n > 0 && start <= out[n-1].end {
			out[n-1].end = end
		} else {
			out = append(out, hunk{start, end})
		}
	}
	return out
}

func writeHunk(b *strings.Builder, edits []edit, h hunk) {
	// Line numbers (1-based) where the hunk starts in each text.
	fromLine, toLine := 1, 1
	for _, e := range edits[:h.start] {
		if e.op != '+' {
			fromLine++
		}
		if e.op != '-' {
			toLine++
		}
	}
	fromCount, toCount := 0, 0
	for _, e := range edits[h.start:h.end] {
		if e.op != '+' {
			fromCount++
		}
		if e.op != '-' {
			toCount++
		}
	}
	fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(fromLine, fromCount), hunkRange(toLine, toCount))
	for _, e := range edits[h.start:h.end] {
		b.WriteByte(e.op)
		b.WriteString(e.line)
		b.WriteByte('\n')
	}
}

// hunkRange prints a range as diff -u does: an empty range names the line before it.
func hunkRange(line, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", line-1)
	}
	if count == 1 {
		return fmt.Sprintf("%d", line)
	}
	return fmt.Sprintf("%d,%d", line, count)
}

// File is the unified diff of a file's two versions, headed as git heads it: a/ and b/
// before the path, relative to the working directory when the file is below it, and
// without a leading slash otherwise (a//tmp/x read as a typo).
func File(path, from, to string) string {
	name := filepath.Clean(path)
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(name) {
		if rel, err := filepath.Rel(wd, name); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			name = rel
		}
	}
	name = strings.TrimPrefix(filepath.ToSlash(name), "/")
	return Unified("a/"+name, "b/"+name, from, to)
}
