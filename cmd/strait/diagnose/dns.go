package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/probe"
)

// recordFamilies are the address records of each family.
var recordFamilies = []struct {
	rtype  string
	family corev1.IPFamily
}{{"A", corev1.IPv4Protocol}, {"AAAA", corev1.IPv6Protocol}}

func dnsCheck(m *member, o observed) Result {
	var bad []string
	switch {
	case m.corefileErr != nil:
		bad = append(bad, fmt.Sprintf("CoreDNS's Corefile (%s): %v", corefile.DefaultConfigMap, m.corefileErr))
	case !strings.Contains(m.corefile, corefile.BeginMarker) || !strings.Contains(m.corefile, corefile.EndMarker):
		bad = append(bad, fmt.Sprintf("no strait-dns block in CoreDNS's Corefile (%s): clusterset.local is not forwarded to strait dns", corefile.DefaultConfigMap))
	}
	var answered []string
	var fixes []string
	for _, l := range o.lookups[m.name] {
		if l.err != nil || len(l.records) == 0 && len(l.addrs) == 0 {
			bad = append(bad, fmt.Sprintf("%s from pod %s: %v", l.name, l.pod, l.err))
			continue
		}
		got, wrong, fix := judgeRecords(l)
		bad = append(bad, wrong...)
		fixes = append(fixes, fix...)
		if len(wrong) == 0 {
			answered = append(answered, l.name+" "+got)
		}
	}
	if len(bad) > 0 {
		fixes = append(fixes, "strait dns keeps the block in the Corefile: check that its pods run (strait diagnose deployment) and read their log; CoreDNS must load the ConfigMap again (its reload plugin)")
		return result(checkDNS, m, Fail, strings.Join(bad, "; "), strings.Join(dedupe(fixes), "; "))
	}
	if len(answered) == 0 {
		return result(checkDNS, m, Pass, "the Corefile's strait-dns block is in place (no imported service to look up)", "")
	}
	return result(checkDNS, m, Pass, "Corefile block in place; answered: "+strings.Join(answered, "; "), "")
}

// judgeRecords judges a name's A and AAAA answers against its ServiceImport's families:
// a family it has must be answered with addresses of that family; a family it lacks
// must be NOERROR with no answer (the name exists: NXDOMAIN would tell a resolver that
// asks both that it has no A either, RFC 8020). It returns what was answered, for a
// pass, and what is wrong with what to do.
func judgeRecords(l lookup) (string, []string, []string) {
	if len(l.records) == 0 {
		return strings.Join(l.addrs, ","), nil, nil // a probe that reads no records: the addresses alone
	}
	var got, bad, fixes []string
	families := l.families
	for _, rf := range recordFamilies {
		i := slices.IndexFunc(l.records, func(r probe.Records) bool { return r.Type == rf.rtype })
		if i < 0 {
			continue
		}
		r := l.records[i]
		want := slices.Contains(families, rf.family)
		what := fmt.Sprintf("%s: %s %s (ServiceImport ipFamilies %s)", rf.family, rf.rtype, l.name, familyList(families))
		switch {
		case r.Error != "":
			bad = append(bad, fmt.Sprintf("%s from pod %s: %s", what, l.pod, r.Error))
		case want && (r.Rcode != "NOERROR" || len(r.Addresses) == 0):
			bad = append(bad, fmt.Sprintf("%s is %s with %s, want the service's %s addresses", what, r.Rcode, answerList(r.Addresses), rf.family))
			fixes = append(fixes, fmt.Sprintf("strait dns answers %s from the ServiceImport's %s addresses (its clusterset IPs, or a headless service's endpoints): strait show imports shows them, and strait dns's log says what it served", rf.rtype, rf.family))
		case !want && r.Rcode != "NOERROR":
			bad = append(bad, fmt.Sprintf("%s is %s, want NOERROR with no answer: the name exists, and a resolver told it does not may drop its other records too", what, r.Rcode))
			fixes = append(fixes, "strait dns must answer a family a service lacks with NOERROR and no record (NODATA), not NXDOMAIN: is another server answering clusterset.local before it (the Corefile's order)?")
		case !want && len(r.Addresses) > 0:
			bad = append(bad, fmt.Sprintf("%s is answered with %s, a family the service does not have", what, strings.Join(r.Addresses, ",")))
			fixes = append(fixes, "strait dns answered a family the ServiceImport does not list: read strait dns's log")
		case want:
			got = append(got, rf.rtype+" "+strings.Join(r.Addresses, ","))
		default:
			got = append(got, rf.rtype+" none (NOERROR)")
		}
	}
	return strings.Join(got, ", "), bad, fixes
}

func familyList(fs []corev1.IPFamily) string {
	if len(fs) == 0 {
		return "none"
	}
	var s []string
	for _, f := range fs {
		s = append(s, string(f))
	}
	return strings.Join(s, ",")
}

func answerList(addrs []string) string {
	if len(addrs) == 0 {
		return "no answer"
	}
	return strings.Join(addrs, ",")
}

// dedupe keeps the first of each string, in order.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		out = appendNew(out, s)
	}
	return out
}
