package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
)

type options struct {
	services    int
	perNS       int
	seconds     int
	rounds      int
	clients     int
	warmup      int
	outstanding int
	rate        int
	straitd     string
	coredns     string
	dnsperf     string
	work        string
	udpSockets  int
	// plugins are the CoreDNS servers run beside strait dns, one per plugin.
	plugins []string
}

func main() {
	o := options{}
	flag.IntVar(&o.services, "services", 10000, "imported services")
	flag.IntVar(&o.perNS, "per-namespace", 100, "services per namespace")
	flag.IntVar(&o.seconds, "seconds", 10, "dnsperf run length per server and round")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each round measures every server once, in turn")
	flag.IntVar(&o.warmup, "warmup", 3, "seconds of dnsperf per server and mode before measuring, not counted")
	flag.IntVar(&o.clients, "clients", 10, "dnsperf -c (simulated clients)")
	flag.IntVar(&o.outstanding, "outstanding", 100, "dnsperf -q (queries in flight) in the throughput runs")
	flag.IntVar(&o.rate, "rate", 10000, "dnsperf -Q (queries per second) in the latency runs; 0 skips them")
	flag.StringVar(&o.straitd, "straitd", "bin/straitd", "straitd binary (its dns daemon)")
	flag.StringVar(&o.coredns, "coredns", "/tmp/coredns", "coredns binary")
	flag.StringVar(&o.dnsperf, "dnsperf", "dnsperf", "dnsperf binary")
	flag.StringVar(&o.work, "work", "", "scratch directory (default: a new temporary one, removed after)")
	flag.IntVar(&o.udpSockets, "udp-sockets", 2, "UDP sockets of each server (strait --udp-sockets, CoreDNS multisocket)")
	plugins := flag.String("coredns-plugins", "hosts,file", "CoreDNS servers to run beside strait dns, one per plugin (hosts, file); the bench line needs hosts")
	flag.Parse()
	for _, p := range strings.Split(*plugins, ",") {
		if p != "hosts" && p != "file" {
			fmt.Fprintf(os.Stderr, "dnsbench: -coredns-plugins %q: %q is neither hosts nor file\n", *plugins, p)
			os.Exit(2)
		}
		o.plugins = append(o.plugins, p)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(1)
	}
}

type server struct {
	name string
	addr string
	cmd  *exec.Cmd
}

func run(o options) (err error) {
	if o.work == "" {
		dir, err := os.MkdirTemp("", "strait-dnsbench-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		o.work = dir
	}
	cl, err := clusters.StartCluster("bench")
	if err != nil {
		return fmt.Errorf("starting the API server: %w", err)
	}
	defer func() { err = errors.Join(err, cl.Stop()) }()
	cfg := cl.Config
	kubeconfig := filepath.Join(o.work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cl.KubeConfig, 0o600); err != nil {
		return err
	}
	scheme, err := source.Scheme()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	start := time.Now()
	names, err := populate(context.Background(), c, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created %d ServiceImports and %d EndpointSlices in %s\n", len(names), 3*len(names), time.Since(start).Round(time.Second))

	queries := filepath.Join(o.work, "queries.txt")
	if err := writeQueries(queries, names); err != nil {
		return err
	}
	mport, err := freeport.Port()
	if err != nil {
		return err
	}
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(mport))
	servers, err := startServers(o, kubeconfig, metricsAddr, names)
	defer func() {
		for _, s := range servers {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	}()
	if err != nil {
		return err
	}
	modes := []mode{{name: "throughput", desc: fmt.Sprintf("-q %d, no rate limit", o.outstanding), args: []string{"-q", strconv.Itoa(o.outstanding)}}}
	if o.rate > 0 {
		modes = append(modes, mode{name: "latency", desc: fmt.Sprintf("-q %d -Q %d (fixed offered load)", o.outstanding, o.rate),
			args: []string{"-q", strconv.Itoa(o.outstanding), "-Q", strconv.Itoa(o.rate)}, perQuery: true})
	}
	results := map[string]map[string][]result{}
	for _, m := range modes {
		results[m.name] = map[string][]result{}
		for _, s := range servers {
			warm := mode{args: m.args}
			if _, err := dnsperf(options{dnsperf: o.dnsperf, seconds: o.warmup, clients: o.clients}, s.addr, queries, warm); err != nil {
				return fmt.Errorf("%s %s warm-up: %w", m.name, s.name, err)
			}
		}
		for r := range o.rounds {
			// Each round starts with another server, so that none always runs first.
			for k := range servers {
				s := servers[(r+k)%len(servers)]
				res, err := dnsperf(o, s.addr, queries, m)
				if err != nil {
					return fmt.Errorf("%s %s round %d: %w", m.name, s.name, r+1, err)
				}
				fmt.Fprintf(os.Stderr, "%s round %d %-14s %10.0f qps  avg %.3f ms  p99 %.3f ms  lost %d\n", m.name, r+1, s.name, res.qps, res.avgMs, res.p99Ms, res.lost)
				results[m.name][s.name] = append(results[m.name][s.name], res)
			}
		}
	}
	for _, m := range modes {
		report(o, m, servers, results[m.name])
	}
	mem := memory(servers, metricsAddr)
	serverNames := make([]string, len(servers))
	for i, s := range servers {
		serverNames[i] = s.name
	}
	_, _ = os.Stdout.WriteString("\n" + benchLine(serverNames, results, mem))
	return nil
}

// populate creates the member's objects: Membership c1, Peers c2 and c3, and for every
// service a ServiceImport and three slices (c1 not ready, c2 and c3 ready).
func populate(ctx context.Context, c client.Client, o options) ([]string, error) {
	must := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/bench", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
				ServiceCIDRs: []string{"10.101.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}}},
	}
	for _, p := range []string{"c2", "c3"} {
		must = append(must, &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: p},
			Spec: straitv1.PeerSpec{ClusterID: p, CIDRs: []string{"10.0.0.0/8"}}})
	}
	for ns := range (o.services + o.perNS - 1) / o.perNS {
		must = append(must, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", ns)}})
	}
	for _, obj := range must {
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
	}
	names := make([]string, o.services)
	work := make(chan int)
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ns, svc := fmt.Sprintf("ns-%d", i/o.perNS), fmt.Sprintf("svc-%d", i)
				names[i] = svc + "." + ns
				objs := []client.Object{&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc},
					Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}}
				for k, cl := range []string{"c1", "c2", "c3"} {
					ready := k > 0
					objs = append(objs, &discoveryv1.EndpointSlice{
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-" + cl, Labels: map[string]string{
							mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: cl}},
						AddressType: discoveryv1.AddressTypeIPv4,
						Endpoints: []discoveryv1.Endpoint{{Addresses: []string{address(k+1, i)},
							Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
					})
				}
				for _, obj := range objs {
					if err := c.Create(ctx, obj); err != nil {
						errc <- fmt.Errorf("creating %s/%s: %w", ns, obj.GetName(), err)
						return
					}
				}
			}
		}()
	}
	var err error
feed:
	for i := range o.services {
		select {
		case work <- i:
		case err = <-errc:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return names, err
}

// address of service i in cluster k (1..3): 10.(100+k).x.y.
func address(k, i int) string { return fmt.Sprintf("10.%d.%d.%d", 100+k, i/250, i%250+1) }

func writeQueries(path string, names []string) error {
	shuffled := append([]string(nil), names...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var b strings.Builder
	for _, n := range shuffled {
		b.WriteString(n + ".svc.clusterset.local A\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// startServers starts strait dns, CoreDNS with hosts and CoreDNS with file, and waits
// until each answers the last service.
func startServers(o options, kubeconfig, metricsAddr string, names []string) ([]*server, error) {
	var hosts, zone strings.Builder
	zone.WriteString("$ORIGIN clusterset.local.\n@ 5 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. 1 7200 1800 86400 5\n@ 5 IN NS ns.dns.clusterset.local.\nns.dns 5 IN A 127.0.0.1\n")
	for i, n := range names {
		// CoreDNS answers what strait dns answers on the round-robin's first turn.
		fmt.Fprintf(&hosts, "%s %s.svc.clusterset.local\n", address(2, i), n)
		fmt.Fprintf(&zone, "%s.svc 5 IN A %s\n", n, address(2, i))
	}
	hostsFile, zoneFile := filepath.Join(o.work, "hosts"), filepath.Join(o.work, "db.clusterset.local")
	if err := errors.Join(os.WriteFile(hostsFile, []byte(hosts.String()), 0o644), os.WriteFile(zoneFile, []byte(zone.String()), 0o644)); err != nil {
		return nil, err
	}
	var servers []*server
	start := func(name string, cmd *exec.Cmd, addr string) error {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		servers = append(servers, &server{name: name, addr: addr, cmd: cmd})
		return waitAnswer(addr, names[len(names)-1]+".svc.clusterset.local.", 3*time.Minute)
	}
	port, err := freeport.Port()
	if err != nil {
		return servers, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := start("strait dns", exec.Command(o.straitd, "dns", "--listen", addr, "--kubeconfig", kubeconfig,
		"--coredns=false", "--metrics-addr", metricsAddr, "--udp-sockets", strconv.Itoa(o.udpSockets)), addr); err != nil {
		return servers, err
	}
	for _, plugin := range o.plugins {
		port, err := freeport.Port()
		if err != nil {
			return servers, err
		}
		body := fmt.Sprintf("    hosts %s {\n        ttl 5\n        no_reverse\n    }\n", hostsFile)
		if plugin == "file" {
			body = fmt.Sprintf("    file %s\n", zoneFile)
		}
		corefile := filepath.Join(o.work, "Corefile."+plugin)
		text := fmt.Sprintf("clusterset.local:%d {\n    bind 127.0.0.1\n    multisocket %d\n%s}\n", port, o.udpSockets, body)
		if err := os.WriteFile(corefile, []byte(text), 0o644); err != nil {
			return servers, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := start("CoreDNS "+plugin, exec.Command(o.coredns, "-conf", corefile), addr); err != nil {
			return servers, err
		}
	}
	return servers, nil
}

func waitAnswer(addr, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &dns.Client{Timeout: time.Second}
	for {
		r, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer %s (last answer: %v): %w", addr, name, r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
