package labtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hostview"
	"github.com/straitnet/strait/test/promcheck"
	"github.com/straitnet/strait/test/require"
)

// Config is the lab a test binary wants.
type Config struct {
	// ClusterSet is the manifest's path relative to the repository's root.
	ClusterSet string
	Spec       topology.Spec
	// PortBase is the host loopback port of the first forwarder.
	PortBase int
	// UpTimeout bounds "lab up" (default 5 minutes).
	UpTimeout time.Duration
	// BeforeUp runs once strait is built, before the lab comes up; its error fails the
	// package.
	BeforeUp func(*Env) error
}

// Env is the lab of one test binary.
type Env struct {
	Lab  *lab.Lab
	Topo *topology.Lab
	// Root is the repository's root; Strait the people's binary built for this run;
	// K8sBin and CoreDNS the binaries the lab runs. Strait's daemons run from the images
	// in bin/images (make image: make test builds them from the same sources).
	Root, Strait, K8sBin, CoreDNS string
	// UpTime is how long "lab up" took.
	UpTime time.Duration

	skipped    string
	upErr      error
	upOpts     lab.UpOptions
	clusterSet *straitv1.ClusterSet
}

// Main brings the lab up, runs the tests, checks that the API servers refused no request
// of Strait's or Flux's ServiceAccounts (and leaves what they did in $STRAIT_RBAC_USAGE),
// takes the lab down and checks that nothing is left; it returns the exit code for
// os.Exit. Without root or the binaries the tests
// skip, except under CI, where that fails the package.
func Main(m *testing.M, cfg Config, env *Env) int {
	flag.Parse()
	// The tests' controller-runtime clients log nothing worth reading; without a logger
	// controller-runtime prints a warning with a stack trace.
	ctrllog.SetLogger(logr.Discard())
	root, err := clusters.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.Root, env.K8sBin, env.CoreDNS = root, clusters.Assets(root), filepath.Join(root, "bin", "coredns")
	reason := prerequisites(env)
	if p := filepath.Join(promcheck.Bin(root), "prometheus"); reason == "" && cfg.Spec.Monitoring {
		if _, err := os.Stat(p); err != nil {
			reason = "missing " + p + " (make prometheus-binaries)"
		}
	}
	if reason != "" {
		if require.CI() {
			return require.MainSkip("lab tests: %s", reason)
		}
		env.skipped = reason
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "strait-lab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	env.Strait = filepath.Join(tmp, "strait")
	build := exec.Command("go", "build", "-ldflags", imageStamp(root), "-o", tmp, "github.com/straitnet/strait/cmd/strait")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building strait:", err)
		return 1
	}
	l := lab.New(lab.Options{StateDir: filepath.Join(tmp, "state"), K8sBin: env.K8sBin,
		CoreDNS: env.CoreDNS, Strait: env.Strait, PortBase: cfg.PortBase, Out: os.Stderr,
		NodeBin: filepath.Join(root, "bin", "node"), ImageDir: filepath.Join(root, "bin", "images"),
		Prometheus: filepath.Join(promcheck.Bin(root), "prometheus"),
		Kustomize:  filepath.Join(root, "kustomize")})
	env.Lab = l
	// An interrupted run (Ctrl-C, a killed go test) takes its lab down too: nothing else
	// would, and the next run's nodes would find their cgroups taken.
	downing := stopOnSignal(l, tmp)
	// The host as the lab must leave it: the kubelets' sysctls, the top of /var/lib,
	// /var/log and /run, the paths containerd and kubelets write to, no node cgroup.
	host, err := hostview.Take("/var/lib", "/var/log", "/run")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: host view:", err)
		return 1
	}
	if cfg.BeforeUp != nil {
		if err := cfg.BeforeUp(env); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
	}
	cs, err := os.ReadFile(filepath.Join(root, cfg.ClusterSet))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	timeout := cfg.UpTimeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	env.upOpts = lab.UpOptions{Spec: cfg.Spec, ClusterSet: cs, Timeout: timeout * 3 / 5}
	env.upErr = l.Up(ctx, env.upOpts)
	env.UpTime = time.Since(start)
	fmt.Fprintf(os.Stderr, "lab up: %.1fs, err=%v\n", env.UpTime.Seconds(), env.upErr)
	if env.upErr == nil {
		_, env.Topo, env.upErr = l.Load()
	}
	if env.upErr == nil {
		env.clusterSet, env.upErr = plan.Parse(cs)
	}
	code := m.Run()
	// Before the lab goes: its state directory holds the audit logs.
	if err := checkAudit(l, suiteName()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: RBAC:", err)
		code = 1
	}
	// After a signal the handler takes the lab down and exits; two teardowns at once
	// would trip over each other's deletions.
	downing.Lock()
	marks := markLab(env.Topo, l.State().Dir)
	if err := takeDown(l); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: lab down:", err)
		code = 1
	}
	// "lab down" returns only once the lab's processes have exited: looked at at once.
	if left := marks.running(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lab down returned while %d processes of the lab still ran: %s\n", len(left), strings.Join(left, "; "))
		code = 1
	}
	if left := l.Leftovers(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: lab down left:", strings.Join(left, "; "))
		code = 1
	}
	if after, err := hostview.Take("/var/lib", "/var/log", "/run"); err != nil || host.Diff(after) != "" {
		fmt.Fprintf(os.Stderr, "FAIL: the lab changed the host: %s %v\n", host.Diff(after), err)
		code = 1
	}
	if links := HostLinks(); len(links) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: sl- links in the host namespace:", links)
		code = 1
	}
	if env.Topo != nil && env.clusterSet != nil {
		if left := HostRoutesIntoTheLab(env.LabAddresses()); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "FAIL: after lab down the host still routes into the lab:", strings.Join(left, "; "))
			code = 1
		}
	}
	return code
}

// imageStamp is the linker flags that give strait the version and commit of the images
// the lab runs, so that strait version compares the daemons with the build they came
// from; none without make image's record of them.
func imageStamp(root string) string {
	v, r := imageBuild(root)
	if v == "" {
		return ""
	}
	return "-X github.com/straitnet/strait/internal/cli.version=" + v + " -X github.com/straitnet/strait/internal/cli.revision=" + r
}

// imageBuild is the version and commit make image gave the images (bin/images/.strait-id);
// empty without it.
func imageBuild(root string) (version, revision string) {
	data, _ := os.ReadFile(filepath.Join(root, "bin", "images", ".strait-id"))
	if f := strings.Fields(string(data)); len(f) == 2 {
		return f[0], f[1]
	}
	return "", ""
}

// ImageBuild is the version and commit of the images the lab runs, and of Strait.
func (e *Env) ImageBuild() (version, revision string) { return imageBuild(e.Root) }

// UpAgain runs "lab up" on the running lab as a person would after a process died: it
// restarts what is not running and changes nothing else.
func (e *Env) UpAgain(t testing.TB) {
	t.Helper()
	// Five minutes: a lab of four clusters, every kube-proxy restarting at once, was seen
	// to take more than two on a saturated 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Lab.Up(ctx, e.upOpts); err != nil {
		t.Fatalf("lab up again: %v", err)
	}
}

// Require skips (or fails, when the lab did not come up) a test that needs the lab.
func (e *Env) Require(t testing.TB) {
	t.Helper()
	if e.skipped != "" {
		t.Skip(e.skipped)
	}
	if e.upErr != nil {
		t.Fatalf("lab up failed: %v", e.upErr)
	}
}

// Skipped says why the lab cannot run here, or "".
func (e *Env) Skipped() string { return e.skipped }

// prerequisites says why the lab cannot run here, or "".
func prerequisites(env *Env) string {
	if testing.Short() {
		return "-short"
	}
	if lacks := require.RootLacks("nft"); lacks != "" {
		return lacks
	}
	if lacks := clusters.Lacks(env.Root); lacks != "" {
		return lacks
	}
	if _, err := os.Stat(env.CoreDNS); err != nil {
		return "missing " + env.CoreDNS + " (make coredns)"
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return "real nodes need nsenter (util-linux)"
	}
	for _, p := range []string{filepath.Join(env.K8sBin, "kubelet"), filepath.Join(env.Root, "bin", "node", "containerd"),
		filepath.Join(env.Root, "bin", "images", "whereami.tar"), filepath.Join(env.Root, "bin", "images", "tools.tar")} {
		if _, err := os.Stat(p); err != nil {
			return "missing " + p + " (make node-binaries images)"
		}
	}
	if names, _ := netns.List(topology.Prefix); len(names) > 0 {
		return "a lab is already up on this machine (sl-* namespaces exist); run 'strait lab down'"
	}
	return ""
}

// HostLinks are the lab's links left in the host's namespace.
func HostLinks() []string {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	var links []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], topology.Prefix) {
			links = append(links, f[1])
		}
	}
	return links
}

// stopOnSignal takes the lab down and removes tmp when the test binary gets SIGINT or
// SIGTERM, then exits 1. It holds the returned lock from the signal on: a teardown
// that takes it too waits for the exit instead of racing the handler.
func stopOnSignal(l *lab.Lab, tmp string) *sync.Mutex {
	var downing sync.Mutex
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		downing.Lock()
		fmt.Fprintf(os.Stderr, "%s: taking the lab down\n", sig)
		if err := takeDown(l); err != nil {
			fmt.Fprintln(os.Stderr, "lab down:", err)
		}
		_ = os.RemoveAll(tmp)
		os.Exit(1)
	}()
	return &downing
}

// takeDown stops the lab's daemon, whether or not it still runs, and takes the lab
// down: a crash leaves the daemon and its kubelets behind, and down must clean up after
// it.
func takeDown(l *lab.Lab) error {
	if pid, ok := l.State().DaemonPid(); ok {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return l.Down(context.Background())
}
