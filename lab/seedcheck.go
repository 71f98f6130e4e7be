package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/plan"
)

// SeedCheck is one of the seed documents' checks, run from a member's client pod as a
// person runs it (kubectl exec): a lookup of a clusterset.local name, every answer of
// which must lie in Want (one at least), or a GET of whereami, whose answer must name
// one of Clusters.
type SeedCheck struct {
	// From is the cluster whose client pod runs the check.
	From string
	// Name is the DNS name looked up, or the URL of a GET.
	Name string
	// Want holds the ranges a lookup's answers must lie in.
	Want []netip.Prefix
	// Clusters are the clusters a GET may be answered by.
	Clusters []string
	// Type is the record type of a lookup: empty for dig's default (A), AAAA when the
	// client's cluster is IPv6-only.
	Type string
}

const clustersetZone = "svc.clusterset.local"

// get says whether the check is a GET (else a lookup).
func (c SeedCheck) get() bool { return strings.HasPrefix(c.Name, "http://") }

// Argv is the command the client pod runs (its tools image has dig and curl). dig +short
// exits 0 on NXDOMAIN with no output, which Verify refuses.
func (c SeedCheck) Argv() []string {
	if c.get() {
		return []string{"curl", "-sS", "--max-time", "5", c.Name}
	}
	argv := []string{"dig", "+short", "+time=2", "+tries=1", c.Name}
	if c.Type != "" {
		argv = append(argv, c.Type)
	}
	return argv
}

// String is the check as a person reads it.
func (c SeedCheck) String() string {
	return fmt.Sprintf("from %s's client: %s", c.From, strings.Join(c.Argv(), " "))
}

// Verify says what is wrong with the output of the check's command, or nil; the first
// value is the answer as the seed documents print it.
func (c SeedCheck) Verify(out string) (string, error) {
	out = strings.TrimSpace(out)
	if c.get() {
		var a workload.Answer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return "", fmt.Errorf("the answer is not whereami's JSON (%w): %q", err, out)
		}
		if !slices.Contains(c.Clusters, a.Cluster) {
			return "", fmt.Errorf("answered by cluster %q, want one of %v: %s", a.Cluster, c.Clusters, out)
		}
		return out, nil
	}
	if out == "" {
		return "", errors.New("no address in the answer (NXDOMAIN, or no A record)")
	}
	var addrs []string
	for _, line := range strings.Split(out, "\n") {
		a, err := netip.ParseAddr(strings.TrimSpace(line))
		if err != nil {
			return "", fmt.Errorf("not an address in the answer: %q", line)
		}
		if !slices.ContainsFunc(c.Want, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return "", fmt.Errorf("answered %s, outside the expected %v", a, c.Want)
		}
		addrs = append(addrs, a.String())
	}
	return strings.Join(addrs, " "), nil
}

// SeedChecks are the checks of the seed documents for a lab of cs with the sample
// workloads: from the client pod of the first cluster that does not export whereami-cs,
// the clusterset.local names of sample/whereami-cs (with each exporting cluster's prefix
// unless cs turns cluster names off) and of sample/whereami-ss (the service, and pod
// whereami-0 of each exporting cluster), then a GET of whereami-cs. Addresses must lie
// in the exporting clusters' service (whereami-cs) or pod (whereami-ss) CIDRs, or under
// globalnet in their global CIDRs (the global range when a cluster pins none); the
// clusterset name of whereami-cs answers its clusterset IP, in the client cluster's own
// service CIDRs, unless cs asks for the per-cluster answer (LocalFirst). It is an
// error when cs exports neither sample service: there is nothing to check.
func SeedChecks(cs *straitv1.ClusterSet) ([]SeedCheck, error) {
	cluster := map[string]straitv1.ClusterSpec{}
	var names []string
	for _, c := range cs.Spec.Clusters {
		cluster[c.Name] = c
		names = append(names, c.Name)
	}
	exporters := func(svc string) []string {
		var out []string
		for _, e := range cs.Spec.Exports {
			if e.Namespace != SampleNamespace || e.Name != svc {
				continue
			}
			from := e.Clusters
			if len(from) == 0 {
				from = names // every member has the sample workloads
			}
			for _, c := range from {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
		return out
	}
	csFrom, ssFrom := exporters(WhereamiCS), exporters(WhereamiSS)
	if len(csFrom) == 0 && len(ssFrom) == 0 {
		return nil, fmt.Errorf("ClusterSet %s exports neither %s/%s nor %s/%s: the seed checks have nothing to look up",
			cs.Name, SampleNamespace, WhereamiCS, SampleNamespace, WhereamiSS)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("ClusterSet %s has no clusters", cs.Name)
	}
	from := names[0]
	for _, n := range names {
		if !slices.Contains(csFrom, n) && !slices.Contains(ssFrom, n) {
			from = n
			break
		}
	}
	ranges := func(clusters []string, cidrs func(straitv1.ClusterSpec) []string) ([]netip.Prefix, error) {
		var out []netip.Prefix
		for _, n := range clusters {
			c, ok := cluster[n]
			if !ok {
				return nil, fmt.Errorf("an export names cluster %q, which the ClusterSet does not have", n)
			}
			list := cidrs(c)
			if g := cs.Spec.Globalnet; g != nil && g.Enabled {
				switch {
				case c.GlobalCIDR != "":
					list = []string{c.GlobalCIDR}
				case g.CIDRRange != "":
					list = []string{g.CIDRRange}
				default:
					list = []string{straitv1.DefaultGlobalCIDRRange}
				}
			}
			for _, s := range list {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					return nil, fmt.Errorf("cluster %s: CIDR %q: %w", n, s, err)
				}
				out = append(out, p)
			}
		}
		return out, nil
	}
	services := func(c straitv1.ClusterSpec) []string { return c.ServiceCIDRs }
	pods := func(c straitv1.ClusterSpec) []string { return c.PodCIDRs }
	clusterNames := !cs.Spec.DNS.DisableClusterNames
	var checks []SeedCheck
	if len(csFrom) > 0 {
		all, err := ranges(csFrom, services)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s.%s.%s", WhereamiCS, SampleNamespace, clustersetZone)
		if cs.Spec.DNS.ServiceAnswer != straitv1.ServiceAnswerLocalFirst {
			// The clusterset IP: the cluster IP of the Service the hub derived in the
			// client's own cluster, never a global IP.
			if all, err = ownRanges(cluster[from]); err != nil {
				return nil, err
			}
		}
		checks = append(checks, SeedCheck{From: from, Name: name, Want: all})
		for _, x := range csFrom {
			if !clusterNames {
				break
			}
			want, _ := ranges([]string{x}, services)
			checks = append(checks, SeedCheck{From: from, Name: x + "." + name, Want: want})
		}
	}
	if len(ssFrom) > 0 {
		all, err := ranges(ssFrom, pods)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s.%s.%s", WhereamiSS, SampleNamespace, clustersetZone)
		checks = append(checks, SeedCheck{From: from, Name: name, Want: all})
		for _, x := range ssFrom {
			want, _ := ranges([]string{x}, pods)
			checks = append(checks, SeedCheck{From: from, Name: "whereami-0." + x + "." + name, Want: want})
		}
	}
	// An IPv6-only client's cluster asks for AAAA records: its A records are none.
	if ipv6Only(cluster[from]) {
		for i := range checks {
			checks[i].Type = "AAAA"
		}
	}
	if len(csFrom) > 0 {
		checks = append(checks, SeedCheck{From: from, Clusters: csFrom,
			Name: fmt.Sprintf("http://%s.%s.%s", WhereamiCS, SampleNamespace, clustersetZone)})
	}
	return checks, nil
}

// ownRanges are a cluster's own service CIDRs, where its derived Services' cluster IPs
// (the clusterset IPs) are.
func ownRanges(c straitv1.ClusterSpec) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.ServiceCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: CIDR %q: %w", c.Name, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// CheckSeed runs the seed checks of the running lab (SeedChecks) in its client pod and
// prints each answer. Each check is tried again until it passes or timeout (counted from
// the first) has passed, since a lab that just came up may still be settling; a check
// that needed more than one try says how long it took. It returns an error naming every
// check that failed, with its last output.
func (l *Lab) CheckSeed(ctx context.Context, w io.Writer, timeout time.Duration) error {
	r, _, err := l.Load()
	if err != nil {
		return err
	}
	if !r.Spec.SampleWorkloads {
		return errors.New("this lab has no sample workloads (sampleWorkloads: false): the seed checks have nothing to ask")
	}
	committed, err := r.JoinedClusterSet()
	if err != nil {
		return err
	}
	cs, err := plan.Parse(committed)
	if err != nil {
		return err
	}
	checks, err := SeedChecks(cs)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== from %s's client pod (kubectl exec): the sample exports through CoreDNS and strait dns\n", checks[0].From)
	deadline := time.Now().Add(timeout)
	var failed []error
	for _, c := range checks {
		start, tries := time.Now(), 0
		for {
			tries++
			answer, err := l.runSeedCheck(ctx, c)
			if err == nil {
				took := ""
				if tries > 1 {
					took = fmt.Sprintf("   (after %d tries, %.1fs)", tries, time.Since(start).Seconds())
				}
				fmt.Fprintf(w, "%s: %s%s\n", c.Name, answer, took)
				break
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				fmt.Fprintf(w, "%s: FAILED: %v\n", c.Name, err)
				failed = append(failed, checkFailed(c, err))
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d seed checks failed:\n%w", len(failed), len(checks), errors.Join(failed...))
	}
	return nil
}

// checkFailed names a failed check and what happened, without wrapping the error: a
// command's exit status in it (curl's 6 for a name that does not resolve) would become
// strait's own, and a failed check exits 1.
func checkFailed(c SeedCheck, err error) error { return fmt.Errorf("%s: %s", c, err.Error()) }

// runSeedCheck runs one check in the client pod.
func (l *Lab) runSeedCheck(ctx context.Context, c SeedCheck) (string, error) {
	var stdout, stderr bytes.Buffer
	if err := l.ExecIn(ctx, c.From, Client, c.Argv(), nil, &stdout, &stderr); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stdout.String()+" "+stderr.String()))
	}
	return c.Verify(stdout.String())
}

// ipv6Only says whether the cluster's pod CIDRs are all IPv6.
func ipv6Only(c straitv1.ClusterSpec) bool {
	for _, s := range c.PodCIDRs {
		if p, err := netip.ParsePrefix(s); err != nil || p.Addr().Is4() {
			return false
		}
	}
	return len(c.PodCIDRs) > 0
}
