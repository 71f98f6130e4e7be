package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// TestPluginWiresAPodAsFlannelsWouldAndUnwiresIt runs the plugin as containerd does on a
// lab node (inside the node's namespace, the real bridge and host-local plugins beside
// it) for a pod namespace: ADD gives the pod an address of flanneld's subnet behind cni0,
// flanneld's MTU, a route to the whole flannel network, no masquerade of the bridge's
// own (flanneld masquerades); the node reaches the pod; CHECK passes; DEL removes the
// pod's interface and its address record, and a second DEL succeeds too.
func TestPluginWiresAPodAsFlannelsWouldAndUnwiresIt(t *testing.T) {
	require.Root(t, "nft")
	pluginDir := plugins(t)
	dir := t.TempDir()
	subnetEnv := filepath.Join(dir, "subnet.env")
	if err := os.WriteFile(subnetEnv, []byte("FLANNEL_NETWORK=10.8.0.0/16\nFLANNEL_SUBNET=10.8.2.1/24\nFLANNEL_MTU=1400\nFLANNEL_IPMASQ=true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"strait-lab","type":"flannel","subnetFile":%q,"dataDir":%q,
		"ipam":{"dataDir":%q},"delegate":{"bridge":"cni0","hairpinMode":true,"isDefaultGateway":true}}`,
		subnetEnv, filepath.Join(dir, "flannel"), filepath.Join(dir, "ipam"))
	node := netns.New(t, "flnode")
	pod := netns.New(t, "flpod")
	cni := func(command, stdin string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := node.Command(ctx, filepath.Join(pluginDir, "flannel"))
		cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=c0ffee", "CNI_NETNS=" + pod.Path(),
			"CNI_IFNAME=eth0", "CNI_PATH=" + pluginDir, "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return stdout.String(), fmt.Errorf("CNI %s: %w: %s %s", command, err, stdout.String(), stderr.String())
		}
		return stdout.String(), nil
	}

	out, err := cni("ADD", conf)
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		IPs []struct{ Address, Gateway string }
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil || len(result.IPs) != 1 {
		t.Fatalf("ADD result %s: %v", out, err)
	}
	podAddr := netip.MustParsePrefix(result.IPs[0].Address)
	if !netip.MustParsePrefix("10.8.2.0/24").Contains(podAddr.Addr()) || result.IPs[0].Gateway != "10.8.2.1" {
		t.Fatalf("pod address %s gateway %s: want one of flanneld's subnet 10.8.2.0/24 behind 10.8.2.1", podAddr, result.IPs[0].Gateway)
	}
	eth0, err := pod.NL.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if eth0.Attrs().MTU != 1400 {
		t.Errorf("pod eth0 MTU %d, want flanneld's 1400", eth0.Attrs().MTU)
	}
	routes, err := pod.NL.RouteList(eth0, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var dsts []string
	for _, r := range routes {
		if r.Gw != nil {
			dsts = append(dsts, fmt.Sprintf("%v via %s", r.Dst, r.Gw))
		}
	}
	for _, want := range []string{"10.8.0.0/16 via 10.8.2.1", "0.0.0.0/0 via 10.8.2.1"} {
		if !strings.Contains(strings.Join(dsts, ","), want) {
			t.Errorf("pod routes %v: want %s", dsts, want)
		}
	}
	if ruleset, err := node.Command(context.Background(), "nft", "list", "ruleset").CombinedOutput(); err != nil || bytes.Contains(ruleset, []byte("masquerade")) {
		t.Errorf("node ruleset (%v): %s\nwant no masquerade of the bridge plugin's: flanneld masquerades", err, ruleset)
	}
	reach(t, node, pod, podAddr.Addr())

	prev := strings.TrimSuffix(conf, "}") + `,"prevResult":` + out + "}"
	if _, err := cni("CHECK", prev); err != nil {
		t.Errorf("CHECK after ADD: %v", err)
	}

	if _, err := cni("DEL", conf); err != nil {
		t.Fatal(err)
	}
	if _, err := pod.NL.LinkByName("eth0"); err == nil {
		t.Errorf("pod eth0 still there after DEL")
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "strait-lab", podAddr.Addr().String())); !os.IsNotExist(err) {
		t.Errorf("host-local's record of %s after DEL: %v, want it gone", podAddr.Addr(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "flannel", "c0ffee")); !os.IsNotExist(err) {
		t.Errorf("saved delegate configuration after DEL: %v, want it gone", err)
	}
	if _, err := cni("DEL", conf); err != nil {
		t.Errorf("second DEL: %v", err)
	}
}

func TestPluginWithoutFlanneldSaysSo(t *testing.T) {
	require.Root(t)
	pluginDir := plugins(t)
	missing := filepath.Join(t.TempDir(), "subnet.env")
	cmd := exec.Command(filepath.Join(pluginDir, "flannel"))
	cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c0ffee", "CNI_NETNS=/proc/self/ns/net", "CNI_IFNAME=eth0", "CNI_PATH=" + pluginDir}
	cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"n","type":"flannel","subnetFile":%q,"dataDir":%q}`, missing, t.TempDir()))
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), missing) || !strings.Contains(string(out), "flanneld") {
		t.Fatalf("ADD without subnet.env: %v %s, want an error naming %s and flanneld", err, out, missing)
	}
}

// plugins builds the plugin into a directory with the node's bridge and host-local
// (make node-binaries), or skips.
func plugins(t *testing.T) string {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range []string{"bridge", "host-local"} {
		data, err := os.ReadFile(filepath.Join(root, "bin", "node", p))
		if err != nil {
			require.Skip(t, "%s missing (run make node-binaries): %v", p, err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "flannel"), "./lab/flannel/cmd/flannel")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return dir
}

// reach connects from the node's namespace to a listener in the pod's.
func reach(t *testing.T, node, pod *netns.NS, addr netip.Addr) {
	t.Helper()
	var ln net.Listener
	if err := pod.Do(func() (err error) { ln, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "8080")); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := netns.Dial(ctx, node.Name, "tcp", net.JoinHostPort(addr.String(), "8080"))
	if err != nil {
		t.Fatalf("node to pod %s: %v", addr, err)
	}
	_ = c.Close()
}
