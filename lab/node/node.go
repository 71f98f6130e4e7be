package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Node is a running node started by this process.
type Node struct {
	cfg        Config
	layout     layout
	containerd *component
	kubelet    *component
	timings    Timings
}

// Timings say how long each step of Start took.
type Timings struct {
	// Containerd is from its start until it answers on its socket.
	Containerd time.Duration
	// Images is the import of every image, or the linking of their seed.
	Images time.Duration
	// ImagesFrom says how the images came: "import", "import, seed saved" (the node
	// made its set's seed, containerd restarted on it) or "seed".
	ImagesFrom string
	// Kubelet is from its start until its health check passes.
	Kubelet time.Duration
}

// Timings are the durations of Start's steps.
func (n *Node) Timings() Timings { return n.timings }

// Start brings the node up: its state, cgroups and mount namespace, containerd with the
// images imported, then the kubelet, and returns once the kubelet answers its health
// check. On failure it removes everything it made and says which component failed,
// where its log is and how the log ends.
func Start(ctx context.Context, c Config) (*Node, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n, err := Prepare(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := n.StartKubelet(ctx, c.KubeConfig); err != nil {
		return nil, err
	}
	return n, nil
}

// Prepare does the part of Start that needs no API server: the node's state, cgroups
// and mount namespace, containerd with the images imported. A lab runs it while the
// control planes come up (importing the images is most of a node's start), then
// StartKubelet once its API server answers. c.KubeConfig may be empty. On failure it
// removes everything it made.
func Prepare(ctx context.Context, c Config) (_ *Node, retErr error) {
	if err := c.validate(false); err != nil {
		return nil, err
	}
	l := layout{dir: filepath.Clean(c.StateDir)}
	if _, err := os.Stat(l.record()); err == nil {
		return nil, fmt.Errorf("node %s: %s exists: the node is up or was not torn down (Teardown it first)", c.Name, l.record())
	}
	// The record first: from here on Teardown finds whatever Start made.
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeRecord(l, record{Name: c.Name, Cgroup: c.cgroupName(), NetNS: c.NetNS}); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(fmt.Errorf("node %s: %w", c.Name, retErr), Teardown(l.dir))
		}
	}()
	for _, d := range []string{l.logDir(), l.kubeletRoot(), l.cniConfDir(), l.cniDataDir(), l.containerdRoot(), l.containerdState()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := writeConfigs(c, l); err != nil {
		return nil, err
	}
	if err := createCgroups(c.cgroupName()); err != nil {
		return nil, err
	}
	if err := createMountNS(l, []string{l.dir, c.BinDir, filepath.Dir(c.Kubelet)}); err != nil {
		return nil, err
	}
	seed, err := SeedPath(c)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: c, layout: l, timings: Timings{ImagesFrom: "import"}}
	t0 := time.Now()
	if seed != "" && SeedSaved(seed) {
		if err := linkSeed(ctx, seed, l.containerdRoot()); err != nil {
			return nil, fmt.Errorf("%w (remove the seed to import the images instead)", err)
		}
		n.timings.ImagesFrom = "seed"
	}
	tLinked := time.Now()
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	t1 := time.Now()
	if n.timings.ImagesFrom != "seed" {
		if err := n.importImages(ctx); err != nil {
			return nil, err
		}
		if seed != "" {
			if err := n.saveSeed(ctx, seed); err != nil {
				return nil, err
			}
			n.timings.ImagesFrom = "import, seed saved"
		}
	}
	n.timings.Containerd = t1.Sub(tLinked)
	n.timings.Images = time.Since(t1) + tLinked.Sub(t0)
	return n, nil
}

// startContainerd starts the node's containerd and waits for its socket.
func (n *Node) startContainerd(ctx context.Context) error {
	var err error
	n.containerd, err = startComponent("containerd", n.cfg, n.layout, n.env(), filepath.Join(n.cfg.BinDir, "containerd"), "--config", n.layout.containerdConfig())
	if err != nil {
		return err
	}
	return n.containerd.waitFor(ctx, "socket", 30*time.Second, n.ctrVersion)
}

// saveSeed stops containerd, so that its databases are closed and whole, keeps its root
// as the seed of the node's image set, and starts containerd again.
func (n *Node) saveSeed(ctx context.Context, seed string) error {
	if err := n.containerd.stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping containerd to save its seed: %w", err)
	}
	if err := saveSeed(ctx, n.layout.containerdRoot(), seed, n.cfg.Images); err != nil {
		return err
	}
	return n.startContainerd(ctx)
}

// StartKubelet starts the kubelet of a prepared node with kubeconfig and returns once it
// answers its health check. On failure it tears the node down.
func (n *Node) StartKubelet(ctx context.Context, kubeconfig []byte) (retErr error) {
	defer func() {
		if retErr != nil {
			retErr = errors.Join(fmt.Errorf("node %s: %w", n.cfg.Name, retErr), Teardown(n.layout.dir))
		}
	}()
	if len(kubeconfig) == 0 {
		return errors.New("kubeConfig is required")
	}
	n.cfg.KubeConfig = kubeconfig
	if err := os.WriteFile(n.layout.kubeconfig(), kubeconfig, 0o600); err != nil {
		return err
	}
	start := time.Now()
	// A kubelet that exits before it is healthy is started again, as systemd's
	// Restart=always does on a real node. Its sockets' race with its own bind of its root
	// ended it at start three times in CI; the root is now shared before it starts
	// (setUpMountNS), and this stays for what else may end a kubelet at start.
	for attempt := 1; ; attempt++ {
		var err error
		n.kubelet, err = startComponent("kubelet", n.cfg, n.layout, n.env(), append([]string{n.cfg.Kubelet}, kubeletArgs(n.cfg, n.layout)...)...)
		if err != nil {
			return err
		}
		err = n.kubelet.waitFor(ctx, "healthz", 60*time.Second, n.healthz)
		if err == nil {
			break
		}
		if !n.kubelet.ended() || attempt == kubeletStarts || ctx.Err() != nil {
			return err
		}
	}
	n.timings.Kubelet = time.Since(start)
	return nil
}

// kubeletStarts is how many times StartKubelet starts a kubelet that exits before it is
// healthy.
const kubeletStarts = 3

// env is the environment of the node's daemons.
func (n *Node) env() []string {
	return []string{"PATH=" + n.cfg.BinDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
}

func writeConfigs(c Config, l layout) error {
	cni, err := cniConfig(c, l)
	if err != nil {
		return err
	}
	kubelet, err := kubeletConfig(c, l)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		l.containerdConfig(): []byte(containerdConfig(c, l)),
		filepath.Join(l.cniConfDir(), "10-strait.conflist"): cni,
		l.kubeletConfig(): kubelet,
		l.resolvConf():    []byte(resolvConf(c.ClusterDNS)),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Err says whether a component ended while the node was up (naming it, its log and the
// log's end); nil while both run.
func (n *Node) Err() error {
	return errors.Join(n.containerd.err(), n.kubelet.err())
}

// Name is the Node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Stop tears the node down.
func (n *Node) Stop() error { return Teardown(n.layout.dir) }

// LogPath is the log of a component ("containerd", "kubelet").
func (n *Node) LogPath(component string) string { return n.layout.log(component) }

// Pids are the process ids of containerd and the kubelet.
func (n *Node) Pids() (containerd, kubelet int) { return n.containerd.pid, n.kubelet.pid }

// ctr runs ctr against the node's containerd, from the host: the socket is in the state
// directory, and images stream through it.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	argv := append([]string{"--address", n.layout.socket(), "--namespace", "k8s.io"}, args...)
	out, err := exec.CommandContext(ctx, filepath.Join(n.cfg.BinDir, "ctr"), argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %v: %w: %s", args, err, out)
	}
	return nil
}

func (n *Node) ctrVersion() error { return n.ctr(context.Background(), "version") }

// importImages loads every image tarball, unpacked for the CRI plugin's snapshotter,
// all at once: most of the time goes to decompressing and unpacking.
func (n *Node) importImages(ctx context.Context) error {
	errs := make([]error, len(n.cfg.Images))
	var wg sync.WaitGroup
	for i, img := range n.cfg.Images {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.ctr(ctx, "images", "import", "--local", "--snapshotter", "overlayfs", img); err != nil {
				errs[i] = fmt.Errorf("import %s: %w", img, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// healthz asks the kubelet's health endpoint on the node's loopback.
func (n *Node) healthz() error {
	conn, err := dialIn(n.cfg.NetNS, "127.0.0.1:"+strconv.Itoa(HealthzPort))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil },
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://kubelet/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// dialIn opens a TCP connection from inside the network namespace at path.
func dialIn(path, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Back to the host's namespace before the thread is unlocked; if that fails the
		// thread stays locked and leaves with the goroutine (the main thread would be
		// parked in the node's namespace instead, so switching back is the rule).
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer orig.Close()
		h, err := netns.GetFromPath(path)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			ch <- result{err: err}
			return
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Teardown removes a node from what its state directory records, also after a crash of
// the process that started it: every process in the node's cgroups (daemons, shims,
// containers), the cgroups, the mount namespace with everything mounted in it, the CNI
// bridge and the state directory. A missing node is no error; a directory without the
// node's record is left alone, as it is not known to be a node's.
func Teardown(stateDir string) error {
	l := layout{dir: filepath.Clean(stateDir)}
	r, err := readRecord(l)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, killCgroups(r.Cgroup, 15*time.Second))
	errs = append(errs, removeMountNS(l))
	errs = append(errs, removeCgroups(r.Cgroup, 10*time.Second))
	errs = append(errs, removeBridge(r.NetNS))
	errs = append(errs, removeState(l))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("teardown of node %s: %w", r.Name, err)
	}
	return nil
}

// removeBridge deletes the CNI bridge from the node's network namespace if it is still
// there (the pods' veths went with their namespaces).
func removeBridge(nsPath string) error {
	h, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil // the namespace is gone, and the bridge with it
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", nsPath, err)
	}
	defer nl.Close()
	link, err := nl.LinkByName(Bridge)
	if err != nil {
		return nil
	}
	if err := nl.LinkDel(link); err != nil {
		return fmt.Errorf("delete %s in %s: %w", Bridge, nsPath, err)
	}
	return nil
}

// removeState removes the state directory after unmounting anything left mounted under
// it on the host (normally only the mount namespace's pin, already gone).
func removeState(l layout) error {
	for _, m := range mountPoints(l.dir) {
		_ = unmountDetached(m)
	}
	if left := mountPoints(l.dir); len(left) > 0 {
		return fmt.Errorf("still mounted under %s: %v", l.dir, left)
	}
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("remove %s: %w", l.dir, err)
	}
	return nil
}

// TeardownAll tears down every node whose state directory is directly under dir (those
// holding a node record), as "lab down" does after a crash; other entries are left alone.
func TeardownAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		state := filepath.Join(dir, e.Name())
		if _, err := os.Stat(layout{dir: state}.record()); e.IsDir() && err == nil {
			errs = append(errs, Teardown(state))
		}
	}
	return errors.Join(errs...)
}

// ImportImage loads an image tarball into the containerd of the node whose state is
// stateDir (binDir holds ctr), as `kind load image-archive` does for a kind node: the
// node's kubelet runs it from then on without pulling.
func ImportImage(ctx context.Context, stateDir, binDir, tarball string) error {
	n := &Node{cfg: Config{BinDir: binDir}, layout: layout{dir: filepath.Clean(stateDir)}}
	return n.ctr(ctx, "images", "import", "--local", "--snapshotter", "overlayfs", tarball)
}

// ContainerPid is the host pid of a container's first process on the node whose state
// is stateDir (id as in a Pod's containerID, without "containerd://"), asked from the
// node's runc: tests enter a pod's namespaces through /proc/<pid>.
func ContainerPid(ctx context.Context, stateDir, binDir, id string) (int, error) {
	l := layout{dir: filepath.Clean(stateDir)}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// containerd's runc shim keeps each containerd namespace's containers under its own
	// root; the CRI plugin's is "k8s.io".
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "runc"), "--root", filepath.Join(l.runcRoot(), "k8s.io"), "state", id).Output()
	if err != nil {
		return 0, fmt.Errorf("runc state %s on node %s: %w", id, stateDir, err)
	}
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("runc state %s on node %s: %w", id, stateDir, err)
	}
	if st.Pid <= 0 {
		return 0, fmt.Errorf("runc state %s on node %s: no pid in %q", id, stateDir, out)
	}
	return st.Pid, nil
}
