package ipsec

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"
)

const (
	// CharonPath is where Debian's strongswan-charon installs the daemon.
	CharonPath = "/usr/lib/ipsec/charon"
	// DefaultCharonDir is where the sidecar keeps strongswan.conf and the VICI socket
	// unless told otherwise; the agent looks for the socket there.
	DefaultCharonDir = "/var/lib/strait/charon"
)

// Charon is how the charon sidecar is set up.
type Charon struct {
	// Dir holds strongswan.conf and the VICI socket; the agent must see the same Dir.
	Dir string
	// NATTPort is the UDP port IKE and ESP-in-UDP use (cable.Local.Port).
	NATTPort int
	// Libipsec makes charon do ESP in userspace through a TUN (kernel-libipsec), for
	// kernels without ESP.
	Libipsec bool
	// Binary is the charon executable; empty means CharonPath.
	Binary string
	// RoutingTable is charon's own routing table (kernel-libipsec puts a route per child
	// SA there whatever install_routes says); 0 means DefaultRoutingTable.
	RoutingTable int
	// RoutingTablePrio is the priority of charon's rule for RoutingTable; it must come
	// after Strait's rule. 0 means DefaultRoutingTablePrio.
	RoutingTablePrio int
	// SharedRun runs charon directly, with the /run it finds, instead of in a mount
	// namespace with a /run of its own (which needs CAP_SYS_ADMIN). For a container,
	// whose /run is already its own (an emptyDir), not for several charons on one machine.
	SharedRun bool
}

// NATKeepalive is how often a gateway behind a NAT refreshes its mapping when it has
// sent nothing else: under every common NAT's UDP timeout (Linux conntrack: 30 s, 20 s
// in the cable tests' routers).
const NATKeepalive = 10 * time.Second

// Defaults for charon's own routing table and rule.
const (
	DefaultRoutingTable     = 220
	DefaultRoutingTablePrio = 32000
)

// ConfPath is the strongswan.conf this sidecar uses (STRONGSWAN_CONF).
func (c Charon) ConfPath() string { return filepath.Join(c.Dir, "strongswan.conf") }

// VICISocket is the path of charon's VICI socket.
func (c Charon) VICISocket() string { return filepath.Join(c.Dir, "charon.vici") }

// plugins charon loads: explicit, so nothing from /etc/strongswan.d applies (it disables
// kernel-libipsec by default). kernel-libipsec comes before kernel-netlink so it provides
// the IPsec backend while kernel-netlink provides addresses and routes.
var plugins = []string{
	"random", "nonce", "openssl", "aes", "sha1", "sha2", "hmac", "gcm", "gmp",
	"kdf", "pem", "pkcs1", "x509", "pubkey", "socket-default", "vici",
}

var confTemplate = template.Must(template.New("strongswan.conf").Parse(`# Written by strait for its charon sidecar; do not edit.
charon {
	load = {{.Load}}
	port = 0
	port_nat_t = {{.NATTPort}}
	# Strait installs the routes to remote CIDRs itself, in its own table.
	# kernel-netlink honours this; kernel-libipsec installs a route per child SA anyway.
	install_routes = no
	# Those go to charon's own table behind a rule consulted after Strait's, so Strait's
	# table decides and charon's is only a fallback.
	routing_table = {{.Table}}
	routing_table_prio = {{.Prio}}
	install_virtual_ip = no
	# A gateway behind a NAT sends a NAT-T keepalive whenever it has sent nothing for this
	# long, refreshing the NAT's mapping of its IKE and ESP-in-UDP flow from inside.
	# charon's default, 20 s, is no margin under NATs that forget a UDP flow after 20-30 s.
	# Dead-peer detection (dpd_delay, 10 s without inbound traffic) also crosses the NAT.
	keep_alive = {{.KeepAlive}}
	retransmit_timeout = 2.0
	retransmit_tries = 3
	plugins {
		vici {
			socket = unix://{{.Socket}}
		}
	}
	filelog {
		stderr {
			default = 1
			ike = 1
			time_format = %b %e %T
		}
	}
	syslog {
		daemon {
			default = -1
		}
	}
}
`))

// Conf is the text of the sidecar's strongswan.conf.
func (c Charon) Conf() (string, error) {
	load := []string{}
	if c.Libipsec {
		load = append(load, "kernel-libipsec")
	}
	load = append(load, "kernel-netlink")
	load = append(load, plugins...)
	var b bytes.Buffer
	err := confTemplate.Execute(&b, map[string]any{
		"Load": strings.Join(load, " "), "NATTPort": c.NATTPort, "Socket": c.VICISocket(),
		"KeepAlive": fmt.Sprintf("%ds", int(NATKeepalive/time.Second)),
		"Table":     cmp.Or(c.RoutingTable, DefaultRoutingTable), "Prio": cmp.Or(c.RoutingTablePrio, DefaultRoutingTablePrio),
	})
	return b.String(), err
}

// WriteConf writes the sidecar's strongswan.conf into Dir.
func (c Charon) WriteConf() error {
	if err := c.checkDir(); err != nil {
		return err
	}
	conf, err := c.Conf()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("charon directory: %w", err)
	}
	if err := os.WriteFile(c.ConfPath(), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", c.ConfPath(), err)
	}
	return nil
}

// Command is charon in its own mount namespace with a private /run: charon's pid file
// path is fixed (/run/charon.pid), and a private /run lets several charons run on one
// machine (tests, the lab) and leaves no file behind. Run WriteConf first.
func (c Charon) Command(ctx context.Context) *exec.Cmd {
	argv := c.Argv()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// Argv is the command line of Command, for wrapping it (e.g. in `ip netns exec`).
func (c Charon) Argv() []string {
	bin := c.Binary
	if bin == "" {
		bin = CharonPath
	}
	if c.SharedRun {
		return []string{bin}
	}
	// Dir is opened before the tmpfs hides it and bound back in place through that
	// descriptor, so a Dir under /run (the lab's state, a pod's emptyDir mounted there)
	// stays the agent's Dir. --no-canonicalize keeps mount(8) from resolving the
	// descriptor's link to the path, which would name the new, empty directory.
	return []string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", privateRunScript, bin, c.Dir}
}

// privateRunScript runs $0 with a tmpfs over /run and $1 (charon's Dir) bound back.
const privateRunScript = `exec 3<"$1" && mount -t tmpfs strait-charon /run && mkdir -p "$1" && ` +
	`mount --no-canonicalize --bind /proc/self/fd/3 "$1" && exec 3<&- && exec "$0"`

// Env is what charon needs in its environment beyond the agent's.
func (c Charon) Env() []string { return []string{"STRONGSWAN_CONF=" + c.ConfPath()} }

// Run is the sidecar: it writes strongswan.conf, runs charon until ctx ends, then stops
// it (SIGTERM) and removes what it left in Dir (the VICI socket, the conf), so a stopped
// sidecar leaves nothing behind. charon's output goes to out.
func (c Charon) Run(ctx context.Context, out io.Writer) error {
	if err := c.WriteConf(); err != nil {
		return err
	}
	defer c.removeFiles()
	// A socket left by a charon that crashed would make the agent talk to nothing.
	_ = os.Remove(c.VICISocket())
	argv := c.Argv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start charon: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("charon exited: %w", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("charon did not stop within 10s of SIGTERM; killed")
	}
	return nil
}

// checkDir refuses /run itself as Dir: charon gets a private /run, and binding the
// whole of the host's /run back would undo that.
func (c Charon) checkDir() error {
	if c.Dir == "" {
		return errors.New("charon sidecar needs a directory")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return err
	}
	if dir == "/run" || dir == "/var/run" || dir == "/" {
		return fmt.Errorf("charon sidecar directory %s: charon gets a /run of its own; give it a directory of its own (e.g. %s)", c.Dir, DefaultCharonDir)
	}
	return nil
}

func (c Charon) removeFiles() {
	for _, p := range []string{c.VICISocket(), c.ConfPath()} {
		_ = os.Remove(p)
	}
}
