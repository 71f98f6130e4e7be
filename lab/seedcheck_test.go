package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/straitnet/strait/plan"
)

// TestSeedChecksOfTheExamples: the checks `strait lab check` runs for the examples that
// "make lab" and "make lab-globalnet" bring up, each line "from: command => ranges or
// clusters", and an example without the sample exports refused with why.
func TestSeedChecksOfTheExamples(t *testing.T) {
	for _, tc := range []struct {
		example string
		want    []string
		err     string
	}{
		{example: "basic", want: []string{
			// The clusterset IP, in c1's own service CIDR.
			"c1: dig +short +time=2 +tries=1 whereami-cs.sample.svc.clusterset.local => [10.88.0.0/16]",
			"c1: dig +short +time=2 +tries=1 c2.whereami-cs.sample.svc.clusterset.local => [10.99.0.0/16]",
			"c1: dig +short +time=2 +tries=1 whereami-ss.sample.svc.clusterset.local => [10.9.0.0/16]",
			"c1: dig +short +time=2 +tries=1 whereami-0.c2.whereami-ss.sample.svc.clusterset.local => [10.9.0.0/16]",
			"c1: curl -sS --max-time 5 http://whereami-cs.sample.svc.clusterset.local => [c2]",
		}},
		{example: "globalnet", want: []string{
			"g1: dig +short +time=2 +tries=1 whereami-cs.sample.svc.clusterset.local => [10.77.0.0/16]",
			"g1: dig +short +time=2 +tries=1 g2.whereami-cs.sample.svc.clusterset.local => [242.2.0.0/24]",
			"g1: dig +short +time=2 +tries=1 whereami-ss.sample.svc.clusterset.local => [242.2.0.0/24]",
			"g1: dig +short +time=2 +tries=1 whereami-0.g2.whereami-ss.sample.svc.clusterset.local => [242.2.0.0/24]",
			"g1: curl -sS --max-time 5 http://whereami-cs.sample.svc.clusterset.local => [g2]",
		}},
		{example: "ipv6only", want: []string{
			// An IPv6-only client asks for AAAA records.
			"c1: dig +short +time=2 +tries=1 whereami-cs.sample.svc.clusterset.local AAAA => [fd10:88::/112]",
			"c1: dig +short +time=2 +tries=1 c2.whereami-cs.sample.svc.clusterset.local AAAA => [fd10:99::/112]",
			"c1: dig +short +time=2 +tries=1 whereami-ss.sample.svc.clusterset.local AAAA => [fd10:9::/56]",
			"c1: dig +short +time=2 +tries=1 whereami-0.c2.whereami-ss.sample.svc.clusterset.local AAAA => [fd10:9::/56]",
			"c1: curl -sS --max-time 5 http://whereami-cs.sample.svc.clusterset.local => [c2]",
		}},
		{example: "three-clusters", err: "exports neither sample/whereami-cs nor sample/whereami-ss"},
	} {
		t.Run(tc.example, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "examples", "clusterset", tc.example, "clusterset.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cs, err := plan.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			checks, err := SeedChecks(cs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range checks {
				want := fmt.Sprint(c.Want)
				if c.get() {
					want = fmt.Sprint(c.Clusters)
				}
				got = append(got, fmt.Sprintf("%s: %s => %s", c.From, strings.Join(c.Argv(), " "), want))
			}
			if g, w := strings.Join(got, "\n"), strings.Join(tc.want, "\n"); g != w {
				t.Errorf("checks:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

// TestSeedCheckVerify: what the client pod's dig and curl print passes only when it is
// an answer from the exporting cluster; an empty answer (dig +short on NXDOMAIN exits 0)
// fails, and each error says what was wrong.
func TestSeedCheckVerify(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "clusterset", "basic", "clusterset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := plan.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := SeedChecks(cs)
	if err != nil {
		t.Fatal(err)
	}
	// checks[0] is the clusterset name (the clusterset IP, in c1's service CIDR),
	// checks[1] c2's name (c2's ClusterIP).
	vip, lookup, get := checks[0], checks[1], checks[len(checks)-1]
	for _, tc := range []struct {
		name   string
		check  SeedCheck
		out    string
		answer string
		err    string
	}{
		{name: "c2's ClusterIP", check: lookup, out: "10.99.119.112\n", answer: "10.99.119.112"},
		{name: "NXDOMAIN", check: lookup, out: "", err: "no address in the answer (NXDOMAIN"},
		{name: "dig's timeout on stdout", check: lookup, out: ";; connection timed out; no servers could be reached\n",
			err: `not an address in the answer: ";; connection timed out`},
		{name: "c1's own ClusterIP", check: lookup, out: "10.88.0.7\n", err: "answered 10.88.0.7, outside the expected [10.99.0.0/16]"},
		{name: "the clusterset IP", check: vip, out: "10.88.201.9\n", answer: "10.88.201.9"},
		{name: "c2's ClusterIP for the clusterset name", check: vip, out: "10.99.119.112\n", err: "answered 10.99.119.112, outside the expected [10.88.0.0/16]"},
		{name: "one address of two outside", check: lookup, out: "10.99.0.3\n10.8.1.2\n", err: "answered 10.8.1.2"},
		{name: "whereami in c2", check: get, out: `{"cluster":"c2","node":"c2-gw-1","pod":"whereami-cs-1","podIP":"10.9.1.2","caller":"10.250.2.12"}` + "\n",
			answer: `{"cluster":"c2","node":"c2-gw-1","pod":"whereami-cs-1","podIP":"10.9.1.2","caller":"10.250.2.12"}`},
		{name: "whereami in c1", check: get, out: `{"cluster":"c1"}`, err: `answered by cluster "c1", want one of [c2]`},
		{name: "not whereami", check: get, out: "curl: (6) Could not resolve host", err: "not whereami's JSON"},
		{name: "nothing", check: get, out: "", err: "not whereami's JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer, err := tc.check.Verify(tc.out)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Verify(%q): %v", tc.out, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Verify(%q) = %q, %v; want an error saying %q", tc.out, answer, err, tc.err)
			case answer != tc.answer:
				t.Fatalf("Verify(%q) answered %q, want %q", tc.out, answer, tc.answer)
			}
		})
	}
}

// exitStatus is an error carrying a command's exit status, as kubectl exec's does.
type exitStatus int

func (e exitStatus) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", int(e))
}
func (e exitStatus) ExitStatus() int { return int(e) }

// TestAFailedCheckExitsOne: a failed check's error keeps what happened but not the exit
// status of the command in the pod, which strait would otherwise exit with (curl's 6).
func TestAFailedCheckExitsOne(t *testing.T) {
	err := checkFailed(SeedCheck{From: "c1", Name: "http://whereami-cs.sample.svc.clusterset.local"},
		fmt.Errorf("exec in sample/client of cluster c1: %w", exitStatus(6)))
	var exited interface{ ExitStatus() int }
	if errors.As(err, &exited) {
		t.Fatalf("%v carries exit status %d", err, exited.ExitStatus())
	}
	if !strings.Contains(err.Error(), "from c1's client: curl") || !strings.Contains(err.Error(), "exit code 6") {
		t.Fatalf("error %q does not name the check and what happened", err)
	}
}
