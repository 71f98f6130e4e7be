package lab

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// hostPorts are the host loopback ports a lab listens on: its Prometheus (base-2), its
// git server (base-1) and a forwarder per control plane (base and up), with one port
// to spare above them.
func hostPorts(base, controlPlanes int) (lo, hi int) { return base - 2, base + controlPlanes }

// checkHostPorts refuses host ports in the kernel's ephemeral range [ephLo, ephHi]: an
// outgoing connection may hold one of them when the lab daemon binds it, and the
// forwarder is then missing (a suite at 33443 failed so, with "connection refused",
// halfway through "lab up").
func checkHostPorts(base, controlPlanes, ephLo, ephHi int) error {
	lo, hi := hostPorts(base, controlPlanes)
	if hi < ephLo || lo > ephHi {
		return nil
	}
	return fmt.Errorf("port base %d: the lab's host ports %d-%d fall in the kernel's ephemeral range %d-%d "+
		"(net.ipv4.ip_local_port_range), where an outgoing connection can take one first; pick a base below %d",
		base, lo, hi, ephLo, ephHi, ephLo-controlPlanes)
}

// ephemeralPorts reads the kernel's ephemeral port range.
func ephemeralPorts() (lo, hi int, err error) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ip_local_port_range: %q", data)
	}
	if lo, err = strconv.Atoi(f[0]); err == nil {
		hi, err = strconv.Atoi(f[1])
	}
	return lo, hi, err
}
