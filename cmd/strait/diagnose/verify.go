package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/probe"
)

// What strait verify checks.
const (
	verifyConnectivity     = "connectivity"
	verifyServiceDiscovery = "service-discovery"
	verifyGatewayFailover  = "gateway-failover"
)

var verifyNames = []string{verifyConnectivity, verifyServiceDiscovery, verifyGatewayFailover}

// failoverBound is the longest gap a gateway failover may leave: the agent releases the
// gateway Lease when it stops, and the standby takes over within a second or two.
const failoverBound = 10 * time.Second

// watchRuns is the longest gateway-failover's `straitd probe watch --for 20s --every
// 100ms --timeout 500ms` runs by its own timeouts: 20 s, then the last try.
const watchRuns = 22 * time.Second

type verifyOptions struct {
	members  memberFlags
	only     []string
	output   string
	timeouts timeouts
}

// NewVerifyCommand is `strait verify`.
func NewVerifyCommand() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [--only connectivity,service-discovery,gateway-failover]",
		Short: "Prove the data path: pod → pod and pod → ClusterIP across with the caller's IP kept, the clusterset names, a gateway failover",
		Long: `verify starts its own probe pods (Strait's image, "straitd probe serve") on every node of
every member it is given, with your own credentials, and a ClusterIP Service in front of
them, and removes them all when it ends:

  connectivity       from a gateway node's and a plain node's pod of each member, a TCP
                     connection to another member's pod IP and to its probe Service's
                     ClusterIP; each must be answered, and the answer must name the
                     caller's own pod IP (nothing masqueraded it)
  service-discovery  every imported service's <name>.<ns>.svc.clusterset.local, looked up
                     from a pod, answers with addresses in an exporting member's pod
                     or service CIDRs
  gateway-failover   the active gateway of the second member is stopped (its agent pod
                     deleted, as a node drain does) while the first member's pod connects
                     every 100 ms; the longest gap must stay under 10s, and another
                     gateway must be active

Every exec and probe pod goes through a node's kubelet and has a deadline, as in strait
diagnose: a node that does not take an exec or its probe pod up within --node-timeout,
is not Ready, or whose probe pod does not run within --pod-start-timeout, is a failed
"nodes" line naming it, printed first, and the rest is verified without it.

A summary table (or -o json|yaml); exit status 0 when everything passed, 2 on any
failure, 3 when verify could not run.`,
		Example: `  strait verify --context c1 --context c2
  strait verify --only connectivity,service-discovery --member-kubeconfig c1=c1.kubeconfig --member-kubeconfig c2=c2.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerify(cli.Context(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addMemberFlags(cmd, &o.members)
	addTimeoutFlags(cmd, &o.timeouts, true, missedNodesLine)
	f.StringSliceVar(&o.only, "only", verifyNames, "what to verify: "+strings.Join(verifyNames, ","))
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: a table)")
	_ = cmd.RegisterFlagCompletionFunc("only", cobra.FixedCompletions(verifyNames, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

func runVerify(ctx context.Context, o *verifyOptions, stdout, stderr io.Writer) error {
	for _, v := range o.only {
		if !contains(verifyNames, v) {
			return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("--only %s: want some of %s", v, strings.Join(verifyNames, ", "))}
		}
	}
	if o.output != "" && o.output != "json" && o.output != "yaml" {
		return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("-o/--output %q: want json or yaml (or nothing, for a table)", o.output)}
	}
	if err := o.timeouts.validate(); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	targets, err := o.members.targets()
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	progress := cli.Progress(stderr)
	rep := &Report{}
	obs := observed{probes: map[string][]probePod{}}
	obs.members = readMembers(ctx, targets, o.timeouts, rep)
	if len(obs.members) < 2 || len(rep.Unreadable) > 0 {
		printSide(stderr, rep)
		return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("verify needs two members that can be read; found %d", len(obs.members))}
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	progress("starting probe pods and a probe Service in every member")
	services := map[string][]string{} // member -> ClusterIPs, one a family
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for _, m := range obs.members {
			_ = m.stopProbes(cctx, run)
			_ = m.kube.CoreV1().Services(straitv1.SystemNamespace).Delete(cctx, "strait-verify-"+run, metav1.DeleteOptions{})
		}
	}()
	for _, m := range obs.members {
		if err := m.startProbes(ctx, run); err != nil {
			return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("%s: %w", m.name, err)}
		}
		ips, err := m.probeService(ctx, run)
		if err != nil {
			return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("%s: %w", m.name, err)}
		}
		services[m.name] = ips
	}
	for _, m := range obs.members {
		pods, err := m.waitProbes(ctx, run)
		if err != nil {
			return &cli.ExitStatus{Code: exitError, Err: err}
		}
		obs.probes[m.name] = pods
	}
	if contains(o.only, verifyConnectivity) {
		progress("connectivity: pod → pod and pod → ClusterIP across, from gateway and plain nodes")
		rep.Results = append(rep.Results, verifyConnections(ctx, obs, services)...)
	}
	if contains(o.only, verifyServiceDiscovery) {
		progress("service-discovery: the clusterset.local names from a pod of each member")
		rep.Results = append(rep.Results, verifyNamesResolve(ctx, obs)...)
	}
	if contains(o.only, verifyGatewayFailover) {
		progress("gateway-failover: stopping %s's active gateway while %s's pod connects every 100 ms", obs.members[1].name, obs.members[0].name)
		rep.Results = append(rep.Results, verifyFailover(ctx, obs))
	}
	rep.Results = append(nodeResults(obs.members, o.timeouts), rep.Results...)
	if err := printReport(stdout, rep, o.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	return exitOf(rep)
}

// probeService puts a ClusterIP Service in front of this run's probe pods, of every
// family the cluster has (PreferDualStack), and returns its ClusterIPs.
func (m *member) probeService(ctx context.Context, run string) ([]string, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-verify-" + run, Namespace: straitv1.SystemNamespace, Labels: map[string]string{probeLabel: "true"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{probeLabel: "true", "run": run}, Ports: []corev1.ServicePort{
			{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: probe.Port, TargetPort: intstr.FromInt32(probe.Port)},
		}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack)},
	}
	created, err := m.kube.CoreV1().Services(straitv1.SystemNamespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the probe Service: %w", err)
	}
	if len(created.Spec.ClusterIPs) == 0 {
		return []string{created.Spec.ClusterIP}, nil
	}
	return created.Spec.ClusterIPs, nil
}

// ipOfFamily is the one of ips of family f, "" without one.
func ipOfFamily(ips []string, f corev1.IPFamily) string {
	for _, ip := range ips {
		if familyOf(ip) == f {
			return ip
		}
	}
	return ""
}

// sources are a member's probe pods to dial from: one on a gateway node, one on a plain node.
func sources(pods []probePod) []probePod {
	var out []probePod
	for _, gw := range []bool{true, false} {
		for _, p := range pods {
			if p.gateway == gw {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// verifyDialRuns is the longest `straitd probe dial --timeout 2s` runs by its own
// timeouts: a connection and a read of 2 s each.
const verifyDialRuns = 5 * time.Second

func verifyConnections(ctx context.Context, obs observed, services map[string][]string) []Result {
	var out []Result
	for _, a := range obs.members {
		for _, b := range obs.members {
			if a == b {
				continue
			}
			if len(obs.probes[a.name]) == 0 || len(obs.probes[b.name]) == 0 {
				out = append(out, Result{Check: verifyConnectivity, Cluster: a.name + "→" + b.name, Status: Fail,
					Detail: "no probe pod runs in " + strings.Join(noProbes(obs, a, b), " and ") + " to connect from or to (see the nodes lines)",
					Fix:    "make the nodes answer (the nodes lines say what to do), then verify again"})
				continue
			}
			var bad, good []string
			for _, f := range sharedFamilies(a, b) {
				fbad, fgood := connectFamily(ctx, a, obs.probes[a.name], pickPlain(obs.probes[b.name]), ipOfFamily(services[b.name], f), f)
				for _, x := range fbad {
					bad = append(bad, labelled(a, f, x))
				}
				if len(fgood) > 0 {
					good = append(good, labelled(a, f, strings.Join(fgood, "; ")))
				}
			}
			r := Result{Check: verifyConnectivity, Cluster: a.name + "→" + b.name, Status: Pass, Detail: strings.Join(good, "; ") + ": caller's IP kept"}
			switch {
			case len(bad) > 0:
				r.Status, r.Detail = Fail, strings.Join(bad, "; ")
				r.Fix = "strait diagnose says where the path breaks (cni, firewall, connections)"
			case len(good) == 0:
				r.Status, r.Detail = Fail, fmt.Sprintf("%s and %s share no IP family (%s: %s; %s: %s)", a.name, b.name, a.name, familyList(a.families()), b.name, familyList(b.families()))
				r.Fix = "the ClusterSet refuses two members of no common family: read the Memberships (strait show networks)"
			}
			out = append(out, r)
		}
	}
	return out
}

// connectFamily connects, in family f, from a gateway node's and a plain node's probe
// pod of a to the pod to and to the ClusterIP svc (of f; "" when the Service got none),
// and says which connections failed or did not keep the caller's address, and which
// did.
func connectFamily(ctx context.Context, a *member, pods []probePod, to probePod, svc string, f corev1.IPFamily) (bad, good []string) {
	toPod, ok := to.inFamily(f)
	if !ok {
		return []string{fmt.Sprintf("%s's probe pod %s has no %s address", to.node, to.name, f)}, nil
	}
	targets := []struct{ what, ip string }{{"pod " + toPod.ip, toPod.ip}}
	if svc != "" {
		targets = append(targets, struct{ what, ip string }{"ClusterIP " + svc, svc})
	} else {
		bad = append(bad, fmt.Sprintf("the probe Service got no %s ClusterIP (its cluster has no %s service CIDR?)", f, f))
	}
	for _, src := range sources(pods) {
		p, ok := src.inFamily(f)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s's probe pod %s has no %s address", src.node, src.name, f))
			continue
		}
		for _, target := range targets {
			var seen probe.Seen
			// The first tries may meet kube-proxy before it programmed the new Service.
			var err error
			for try := 0; try < 5; try++ {
				if err = a.execJSON(ctx, p.node, p.name, "probe", []string{"/straitd", "probe", "dial", "--timeout", "2s", net.JoinHostPort(target.ip, strconv.Itoa(probe.Port))}, verifyDialRuns, &seen); err == nil || nodeFailed(err) {
					break // a node that does not answer is asked no more
				}
				time.Sleep(time.Second)
			}
			from := fmt.Sprintf("%s (%s) → %s", p.node, p.ip, target.what)
			switch {
			case err != nil:
				bad = append(bad, from+": "+err.Error())
			case seen.Seen != p.ip:
				bad = append(bad, fmt.Sprintf("%s: answered, but the caller arrived as %s", from, seen.Seen))
			default:
				good = append(good, from)
			}
		}
	}
	return bad, good
}

// noProbes names those of the members that have no probe pod running.
func noProbes(obs observed, ms ...*member) []string {
	var out []string
	for _, m := range ms {
		if len(obs.probes[m.name]) == 0 {
			out = appendNew(out, m.name)
		}
	}
	return out
}

func verifyNamesResolve(ctx context.Context, obs observed) []Result {
	var out []Result
	for _, m := range obs.members {
		if len(obs.probes[m.name]) == 0 {
			out = append(out, Result{Check: verifyServiceDiscovery, Cluster: m.name, Status: Fail,
				Detail: "no probe pod runs in " + m.name + " to look the names up from (see the nodes lines)",
				Fix:    "make the nodes answer (the nodes lines say what to do), then verify again"})
			continue
		}
		out = append(out, judgeNames(obs, m.name, lookups(ctx, m, obs.probes[m.name])))
	}
	return out
}

// judgeNames is member's service-discovery line from its lookups of the clusterset
// names.
func judgeNames(obs observed, member string, ls []lookup) Result {
	r := Result{Check: verifyServiceDiscovery, Cluster: member, Status: Pass}
	var bad, good []string
	for _, l := range ls {
		_, wrong, _ := judgeRecords(l)
		switch owner := ownerOf(obs, l.addrs); {
		case l.err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", l.name, l.err))
		case len(wrong) > 0:
			bad = append(bad, wrong...)
		case len(l.addrs) == 0:
			// Answered, with nothing in it (a probe that reads no records).
			bad = append(bad, fmt.Sprintf("%s: answered with no address", l.name))
		case owner == "":
			bad = append(bad, fmt.Sprintf("%s: %s, in no member's CIDRs", l.name, strings.Join(l.addrs, ",")))
		default:
			good = append(good, fmt.Sprintf("%s → %s (%s)", l.name, strings.Join(l.addrs, ","), owner))
		}
	}
	switch {
	case len(bad) > 0:
		r.Status, r.Detail, r.Fix = Fail, strings.Join(bad, "; "), "strait diagnose dns"
	case len(good) == 0:
		r.Status, r.Detail, r.Fix = Warn, "no imported service to look up", "export a service in the ClusterSet (strait export) to verify the names"
	default:
		r.Detail = strings.Join(good, "; ")
	}
	return r
}

// ownerOf names the members whose pod or service CIDRs hold the addresses ("" when one
// is in none): an exporting member answers with its own.
func ownerOf(obs observed, addrs []string) string {
	var owners []string
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return ""
		}
		owner := ""
		for _, m := range obs.members {
			for _, c := range append(append([]string{}, m.membership.Spec.PodCIDRs...), m.membership.Spec.ServiceCIDRs...) {
				if p, err := netip.ParsePrefix(c); err == nil && p.Contains(ip) {
					owner = m.name
				}
			}
		}
		if owner == "" {
			return ""
		}
		owners = appendNew(owners, owner)
	}
	return strings.Join(owners, ",")
}

func verifyFailover(ctx context.Context, obs observed) Result {
	a, b := obs.members[0], obs.members[1]
	r := Result{Check: verifyGatewayFailover, Cluster: a.name + "→" + b.name}
	gw := activeGateway(b)
	if gw == nil || len(b.gateways) < 2 {
		r.Status, r.Detail, r.Fix = Warn, fmt.Sprintf("%s has %d gateway-capable nodes", b.name, len(b.gateways)), "label a second node for the gateway selector to have a standby"
		return r
	}
	if len(obs.probes[a.name]) == 0 || len(obs.probes[b.name]) == 0 {
		r.Status, r.Detail = Fail, "no probe pod runs in "+strings.Join(noProbes(obs, a, b), " and ")+" to watch the failover with (see the nodes lines)"
		r.Fix = "make the nodes answer (the nodes lines say what to do), then verify again"
		return r
	}
	// Stopping the active gateway when no standby answers would leave b without one.
	var standbys []string
	for _, g := range b.gateways {
		if g.Spec.NodeName != gw.Spec.NodeName && b.nodeError(g.Spec.NodeName) == nil {
			standbys = append(standbys, g.Spec.NodeName)
		}
	}
	switch {
	case b.nodeError(gw.Spec.NodeName) != nil:
		r.Status, r.Detail = Fail, fmt.Sprintf("not tried: %s's active gateway %s does not answer (see the nodes line): its agent pod cannot be stopped through its kubelet", b.name, gw.Spec.NodeName)
	case len(standbys) == 0:
		r.Status, r.Detail = Fail, fmt.Sprintf("not tried: no standby of %s's active gateway %s answers (see the nodes line): stopping it would leave %s without a gateway", b.name, gw.Spec.NodeName, b.name)
	}
	if r.Status == Fail {
		r.Fix = "make the gateway nodes answer (the nodes lines say what to do), then verify again"
		return r
	}
	from, to := pickPlain(obs.probes[a.name]), pickPlain(obs.probes[b.name])
	agent := b.agentOn(gw.Spec.NodeName)
	if agent == nil {
		r.Status, r.Detail = Fail, "no running agent on the active gateway "+gw.Spec.NodeName
		return r
	}
	// One watch a family the two share, at once: the failover's gap in each.
	type watched struct {
		f   corev1.IPFamily
		w   probe.Watch
		err error
	}
	var watches []chan watched
	for _, f := range sharedFamilies(a, b) {
		src, ok1 := from.inFamily(f)
		dst, ok2 := to.inFamily(f)
		if !ok1 || !ok2 {
			continue
		}
		done := make(chan watched, 1)
		watches = append(watches, done)
		go func() {
			var w probe.Watch
			err := a.execJSON(ctx, src.node, src.name, "probe", []string{"/straitd", "probe", "watch", "--for", "20s", "--every", "100ms", "--timeout", "500ms",
				net.JoinHostPort(dst.ip, strconv.Itoa(probe.Port))}, watchRuns, &w)
			done <- watched{f, w, err}
		}()
	}
	if len(watches) == 0 {
		r.Status, r.Detail = Fail, fmt.Sprintf("no probe pod of %s and %s has an address of a family both carry", a.name, b.name)
		return r
	}
	time.Sleep(3 * time.Second)
	stopped := time.Now()
	err := b.kube.CoreV1().Pods(straitv1.SystemNamespace).Delete(ctx, agent.Name, metav1.DeleteOptions{})
	var gaps []string
	var longest time.Duration
	var errs []error
	for _, done := range watches {
		res := <-done
		gap := time.Duration(res.w.LongestGap) * time.Millisecond
		longest = max(longest, gap)
		gaps = append(gaps, labelled(a, res.f, fmt.Sprintf("longest gap %s (%d of %d tries answered)", gap, res.w.Answers, res.w.Tries)))
		if res.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", res.f, res.err))
		}
	}
	newActive := ""
	gws := &straitv1.GatewayList{}
	if lerr := b.c.List(ctx, gws); lerr == nil {
		for _, g := range gws.Items {
			if g.Spec.HAState == straitv1.HAActive {
				newActive = g.Spec.NodeName
			}
		}
	}
	r.Detail = fmt.Sprintf("stopped %s's active gateway %s at %s; %s; active now %s",
		b.name, gw.Spec.NodeName, stopped.Format("15:04:05"), strings.Join(gaps, "; "), orDash(newActive))
	switch {
	case errors.Join(append(errs, err)...) != nil:
		r.Status, r.Detail = Fail, errors.Join(append(errs, err)...).Error()
	case longest > failoverBound || newActive == "" || newActive == gw.Spec.NodeName:
		r.Status, r.Fix = Fail, "strait show gateways; the agents' logs on both gateway nodes say why the standby did not take over"
	default:
		r.Status = Pass
	}
	return r
}
