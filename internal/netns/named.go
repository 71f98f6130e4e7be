package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RunDir is where ip(8) keeps named namespaces.
const RunDir = "/var/run/netns"

// EtcDir holds per-namespace files that `ip netns exec` bind-mounts over /etc.
const EtcDir = "/etc/netns"

// IP runs ip(8) with args; the error carries its output.
func IP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Exec runs argv in the named namespace through `ip netns exec`, with stdin, and
// returns its combined output; the error names the command and the namespace and
// carries the output.
func Exec(ctx context.Context, ns, stdin string, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %w: %s", strings.Join(argv, " "), ns, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Exists says whether the named namespace exists.
func Exists(name string) bool {
	_, err := os.Stat(Path(name))
	return err == nil
}

// Path is the bind-mount path of a named namespace; an absolute path (such as a real
// pod's /proc/<pid>/ns/net, which ip(8) does not name) is its own.
func Path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(RunDir, name)
}

// Ensure creates a namespace unless it exists, with loopback up and forwarding on.
func Ensure(ctx context.Context, name string) error {
	if !Exists(name) {
		if err := PrepareRunDir(); err != nil {
			return err
		}
		if err := IP(ctx, "netns", "add", name); err != nil {
			return err
		}
	}
	return errors.Join(
		IP(ctx, "-n", name, "link", "set", "lo", "up"),
		Sysctl(name, "net/ipv4/ip_forward", "1"),
		Sysctl(name, "net/ipv4/conf/all/rp_filter", "0"),
		Sysctl(name, "net/ipv4/conf/default/rp_filter", "0"),
	)
}

// Sysctl writes /proc/sys/<key> inside a namespace.
func Sysctl(ns, key, value string) error {
	return Do(ns, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
	})
}

// LinkExists says whether a link exists in a namespace.
func LinkExists(ctx context.Context, ns, name string) bool {
	return exec.CommandContext(ctx, "ip", "-n", ns, "link", "show", "dev", name).Run() == nil
}

// EnsureBridge creates an up bridge in ns.
func EnsureBridge(ctx context.Context, ns, name string) error {
	if !LinkExists(ctx, ns, name) {
		if err := IP(ctx, "-n", ns, "link", "add", name, "type", "bridge"); err != nil {
			return err
		}
	}
	return IP(ctx, "-n", ns, "link", "set", name, "up")
}

// VethPair is one veth pair to make: Name in NS, Peer in PeerNS.
type VethPair struct {
	NS, Name     string
	Addr         netip.Prefix // on Name, when valid
	PeerNS, Peer string
	PeerAddr     netip.Prefix // on Peer, when valid
	PeerMaster   string       // bridge to enslave Peer to
}

// EnsureVeth creates the pair unless Name exists, then sets addresses and brings both up.
func EnsureVeth(ctx context.Context, v VethPair) error {
	if !LinkExists(ctx, v.NS, v.Name) {
		// A half-made pair from a crash: the peer may linger.
		if LinkExists(ctx, v.PeerNS, v.Peer) {
			_ = IP(ctx, "-n", v.PeerNS, "link", "del", v.Peer)
		}
		if err := IP(ctx, "-n", v.NS, "link", "add", v.Name, "type", "veth", "peer", "name", v.Peer, "netns", v.PeerNS); err != nil {
			return err
		}
	}
	var errs []error
	if v.Addr.IsValid() {
		errs = append(errs, IP(ctx, "-n", v.NS, "addr", "replace", v.Addr.String(), "dev", v.Name))
	}
	if v.PeerAddr.IsValid() {
		errs = append(errs, IP(ctx, "-n", v.PeerNS, "addr", "replace", v.PeerAddr.String(), "dev", v.Peer))
	}
	if v.PeerMaster != "" {
		errs = append(errs, IP(ctx, "-n", v.PeerNS, "link", "set", v.Peer, "master", v.PeerMaster))
	}
	errs = append(errs,
		IP(ctx, "-n", v.NS, "link", "set", v.Name, "up"),
		IP(ctx, "-n", v.PeerNS, "link", "set", v.Peer, "up"))
	return errors.Join(errs...)
}

// ReplaceRoute sets a route in ns: via a gateway when via is valid, else on-link on dev.
func ReplaceRoute(ctx context.Context, ns string, dst netip.Prefix, via netip.Addr, dev string) error {
	args := []string{"-n", ns, "route", "replace", dst.String()}
	if via.IsValid() {
		args = append(args, "via", via.String())
	}
	if dev != "" {
		args = append(args, "dev", dev)
	}
	return IP(ctx, args...)
}

// List returns the names of the namespaces that start with prefix.
func List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Pids lists the processes whose network namespace is ns.
func Pids(ns string) []int {
	var st syscall.Stat_t
	if err := syscall.Stat(Path(ns), &st); err != nil {
		return nil
	}
	var out []int
	for _, pid := range Processes() {
		var ps syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &ps) == nil && ps.Ino == st.Ino && ps.Dev == st.Dev {
			out = append(out, pid)
		}
	}
	return out
}

// Processes lists every live process of the machine (a zombie has exited), the calling
// process excepted: /proc/<pid>/ns/net is its main thread's, and the Go runtime parks
// (rather than ends) a locked main thread whose goroutine exited inside a namespace, so
// the caller may look as if it ran in a namespace it only visited.
func Processes() []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// Delete kills every process inside ns, then deletes it and its /etc/netns directory.
// A namespace that does not exist is no error.
func Delete(ctx context.Context, ns string) error {
	KillAll(Pids(ns), 3*time.Second)
	var errs []error
	if Exists(ns) {
		errs = append(errs, IP(ctx, "netns", "del", ns))
	}
	if err := os.RemoveAll(filepath.Join(EtcDir, ns)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// KillAll sends SIGTERM to pids, waits up to grace for them to exit, then SIGKILLs
// what is left.
func KillAll(pids []int, grace time.Duration) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Alive says whether pid runs (a zombie counts as gone).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
		return data[i+2] != 'Z'
	}
	return true
}

// WriteEtc writes /etc/netns/<ns>/<name>, which `ip netns exec` mounts over /etc/<name>.
func WriteEtc(ns, name string, data []byte) error {
	dir := filepath.Join(EtcDir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}
