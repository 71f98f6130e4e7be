package corefile

import (
	"errors"
	"fmt"
	"strings"
)

// The markers around our block. Everything from the start of the begin line to the end
// of the end line (its newline included) is ours.
const (
	BeginMarker = "# strait-dns: begin (managed by `strait dns`; removed by `strait dns --cleanup`)"
	EndMarker   = "# strait-dns: end"
)

// ErrMalformed: a begin marker without its end marker, or the other way round. Nothing
// is changed then: a person edited the markers and has to look.
var ErrMalformed = errors.New("corefile: strait-dns markers are not paired")

// Block is our server block for zones, forwarding to upstream ("10.96.0.53:53"),
// markers and trailing newline included.
func Block(zones []string, upstream string) string {
	var b strings.Builder
	b.WriteString(BeginMarker + "\n")
	for i, z := range zones {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSuffix(z, ".") + ":53")
	}
	b.WriteString(" {\n    errors\n    forward . " + upstream + "\n}\n")
	b.WriteString(EndMarker + "\n")
	return b.String()
}

// find returns the byte range [start, end) of our block in corefile, ok false when it
// has none.
func find(corefile string) (start, end int, ok bool, err error) {
	b := lineIndex(corefile, BeginMarker)
	e := lineIndex(corefile, EndMarker)
	switch {
	case b < 0 && e < 0:
		return 0, 0, false, nil
	case b < 0 || e < 0 || e < b:
		return 0, 0, false, ErrMalformed
	}
	end = e + len(EndMarker)
	if end < len(corefile) && corefile[end] == '\n' {
		end++
	}
	return b, end, true, nil
}

// lineIndex is the index of the first line of s that is exactly line (trailing spaces
// and a CR allowed), -1 when there is none.
func lineIndex(s, line string) int {
	for off := 0; off < len(s); {
		nl := strings.IndexByte(s[off:], '\n')
		l := s[off:]
		if nl >= 0 {
			l = s[off : off+nl]
		}
		if strings.TrimRight(l, " \t\r") == line {
			return off
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return -1
}

// Ensure returns corefile with block in place: replacing our previous block where it
// was, or put first when there was none. Every byte outside our block is unchanged.
// It refuses when another server block already serves one of zones on port 53, since
// CoreDNS would not start with two.
func Ensure(corefile, block string, zones []string) (string, error) {
	start, end, ok, err := find(corefile)
	if err != nil {
		return "", err
	}
	rest := corefile
	if ok {
		rest = corefile[:start] + corefile[end:]
	}
	if err := conflicts(rest, zones); err != nil {
		return "", err
	}
	if !ok {
		return block + corefile, nil
	}
	return corefile[:start] + block + corefile[end:], nil
}

// Remove returns corefile without our block; unchanged when it has none.
func Remove(corefile string) (string, error) {
	start, end, ok, err := find(corefile)
	if err != nil || !ok {
		return corefile, err
	}
	return corefile[:start] + corefile[end:], nil
}

// conflicts reports server blocks of corefile that serve one of zones on port 53.
func conflicts(corefile string, zones []string) error {
	want := map[string]bool{}
	for _, z := range zones {
		want[normalizeKey(z)] = true
	}
	var errs []error
	for _, key := range serverBlockKeys(corefile) {
		if want[normalizeKey(key)] {
			errs = append(errs, fmt.Errorf("corefile: a server block for %q exists outside strait's markers (another multi-cluster DNS?); remove it first", key))
		}
	}
	return errors.Join(errs...)
}

// normalizeKey turns a server block key ("dns://Clusterset.local.:53") into
// "clusterset.local:53".
func normalizeKey(k string) string {
	k = strings.ToLower(strings.TrimPrefix(k, "dns://"))
	host, port := k, "53"
	if i := strings.LastIndexByte(k, ':'); i >= 0 {
		host, port = k[:i], k[i+1:]
	}
	return strings.TrimSuffix(host, ".") + ":" + port
}

// serverBlockKeys are the keys of the top-level server blocks of a Corefile: the words
// before each "{" at depth 0. Comments and quoted strings are skipped.
func serverBlockKeys(corefile string) []string {
	var keys, pending []string
	depth := 0
	word := strings.Builder{}
	flush := func() {
		if word.Len() > 0 {
			if depth == 0 {
				pending = append(pending, word.String())
			}
			word.Reset()
		}
	}
	for i := 0; i < len(corefile); i++ {
		c := corefile[i]
		switch c {
		case '#':
			flush()
			for i < len(corefile) && corefile[i] != '\n' {
				i++
			}
		case '"':
			for i++; i < len(corefile) && corefile[i] != '"'; i++ {
				if corefile[i] == '\\' {
					i++
				}
			}
		case '{':
			flush()
			if depth == 0 {
				keys = append(keys, pending...)
				pending = nil
			}
			depth++
		case '}':
			flush()
			depth = max(0, depth-1)
		case ' ', '\t', '\n', '\r', ',':
			flush()
		default:
			word.WriteByte(c)
		}
	}
	return keys
}
