package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// node is a row with its children, in the order they were first named.
type node struct {
	name     string
	row      *Row
	children []*node
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	c := &node{name: name}
	n.children = append(n.children, c)
	return c
}

// seconds is the row's time, or its children's sum when only they were recorded (a
// step killed before timed.sh could write it).
func (n *node) seconds() float64 {
	if n.row != nil {
		return n.row.Seconds
	}
	var s float64
	for _, c := range n.children {
		s += c.seconds()
	}
	return s
}

// Tree nests the rows by path; a row recorded twice (a step run again) adds up.
func Tree(rows []Row) *node {
	root := &node{}
	for _, r := range rows {
		n := root
		for _, name := range r.Path {
			n = n.child(name)
		}
		if n.row == nil {
			r := r
			n.row = &r
			continue
		}
		n.row.Seconds += r.Seconds
		if r.Status != 0 {
			n.row.Status = r.Status
		}
	}
	return root
}

// maxMeasured is how many packages or tests of one parent the table shows unless -all.
const maxMeasured = 15

// Table writes the tree: one line a row, indented by depth, with seconds, minutes and
// the share of the total; under a row with children, what they leave unexplained.
func Table(w io.Writer, rows []Row, all bool) {
	root := Tree(rows)
	total := root.seconds()
	fmt.Fprintf(w, "%9s %7s %5s  %s\n", "seconds", "m:ss", "share", "step")
	line := func(depth int, secs float64, name, note string) {
		share := 0.0
		if total > 0 {
			share = 100 * secs / total
		}
		fmt.Fprintf(w, "%9.1f %7s %4.0f%%  %s%s%s\n", secs, minutes(secs), share, strings.Repeat("  ", depth), name, note)
	}
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		kids := append([]*node(nil), n.children...)
		measured := len(kids) > 0
		for _, k := range kids {
			measured = measured && k.row != nil && k.row.Measured
		}
		if measured {
			sort.SliceStable(kids, func(i, j int) bool { return kids[i].seconds() > kids[j].seconds() })
		}
		// Every child counts toward what the parent's time explains, the ones folded
		// into "(N more)" too.
		var sum float64
		for _, k := range kids {
			sum += k.seconds()
		}
		for i, k := range kids {
			if measured && !all && i >= maxMeasured {
				var rest float64
				for _, r := range kids[i:] {
					rest += r.seconds()
				}
				line(depth, rest, fmt.Sprintf("(%d more)", len(kids)-i), "")
				break
			}
			note := ""
			if k.row != nil && k.row.Status != 0 {
				note = fmt.Sprintf("  FAILED (exit %d)", k.row.Status)
			}
			line(depth, k.seconds(), k.name, note)
			walk(k, depth+1)
		}
		// Packages run side by side (go test -p) add up to more than their step.
		if len(kids) > 0 && n.row != nil && n.row.Seconds-sum >= 0.5 {
			line(depth, n.row.Seconds-sum, "(the rest: builds, lab down, checks between)", "")
		}
	}
	line(0, total, "total", "")
	walk(root, 1)
}

func minutes(secs float64) string {
	s := int(secs + 0.5)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
