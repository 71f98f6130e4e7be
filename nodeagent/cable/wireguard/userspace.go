package wireguard

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"
)

// userspaceDevice is an embedded wireguard-go device with its UAPI socket, through which
// wgctrl configures it like any other userspace WireGuard. It must run in a process that
// is wholly inside the device's network namespace: wireguard-go opens its sockets on
// goroutines of its own.
type userspaceDevice struct {
	dev  *device.Device
	uapi net.Listener
	done chan struct{}
}

func startUserspace(name string, mtu int, logf, debugf func(string, ...any)) (*userspaceDevice, error) {
	tdev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, fmt.Errorf("create TUN %s: %w", name, err)
	}
	logger := &device.Logger{Verbosef: worthLogging(logf, debugf), Errorf: logf}
	dev := device.NewDevice(tdev, conn.NewDefaultBind(), logger)
	if n := dev.BatchSize(); n <= 1 {
		// The TUN device took no virtio-net header (TUNSETOFFLOAD failed): every packet
		// is one read and one write, several times the CPU per byte.
		logf("wireguard-go on %s: TUN offloads are off (batch size %d): expect a fraction of the throughput", name, n)
	}
	f, err := ipc.UAPIOpen(name)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("open UAPI socket of %s: %w", name, err)
	}
	l, err := ipc.UAPIListen(name, f)
	_ = f.Close()
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("listen on UAPI socket of %s: %w", name, err)
	}
	u := &userspaceDevice{dev: dev, uapi: l, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go dev.IpcHandle(c)
		}
	}()
	return u, nil
}

// close stops the device: its TUN, its UAPI socket (the file is unlinked) and its UDP
// socket go with it.
func (u *userspaceDevice) close() error {
	err := u.uapi.Close()
	<-u.done
	u.dev.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close UAPI socket: %w", err)
	}
	return nil
}

// worthLogging passes to logf the kinds of wireguard-go's verbose messages that explain
// lost throughput or a cable that does not come up, and the rest (a line per handshake,
// keepalive and routine start) to debugf:
//   - UDP GSO or GRO turned off ("disabled UDP GSO on ..."), or another offload;
//   - a handshake initiation refused as a replay or a flood: the cluster's gateways
//     share one key, so a new active gateway whose first initiation is refused is
//     unreachable until it retries (REKEY_TIMEOUT, 5 s later);
//   - a handshake message that did not authenticate ("Received invalid ...").
func worthLogging(logf, debugf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		lower := strings.ToLower(msg)
		if strings.Contains(msg, "GSO") || strings.Contains(msg, "GRO") || slices.ContainsFunc(
			[]string{"offload", "handshake replay", "handshake flood", "received invalid"},
			func(s string) bool { return strings.Contains(lower, s) }) {
			logf("wireguard-go: %s", msg)
			return
		}
		debugf("wireguard-go: %s", msg)
	}
}
