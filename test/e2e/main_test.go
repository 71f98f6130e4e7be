package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the one lab every test in this package uses; bringing it up costs about half a
// minute, so TestMain does it once.
var env labtest.Env

// labClusterSet is the lab's ClusterSet: the basic one (c1, c2, c2 exporting the sample
// services) in both families.
const labClusterSet = "examples/clusterset/dualstack/clusterset.yaml"

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: labClusterSet,
		// Two gateway-capable nodes for failover, and a plain node whose pods reach the
		// other cluster through vx-strait; a Prometheus in every cluster, so that the
		// fault tests see their faults' alerts fire and resolve; dual-stack clusters under
		// a dual-stack ClusterSet, so that every test runs where both families are carried.
		Spec: topology.Spec{ClusterSet: "dualstack", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true,
			Monitoring: true, IPFamilies: []string{topology.IPv4, topology.IPv6}},
		PortBase: 26443,
		BeforeUp: crashUpThenDown,
	}, &env))
}

// crashUpThenDown kills "strait lab up" with SIGKILL once its control planes are
// starting, then checks that "lab down" leaves nothing behind.
func crashUpThenDown(e *labtest.Env) error {
	l := e.Lab
	up := exec.Command(e.Strait, "lab", "up", "--example", "dualstack", "--state", l.State().Dir, "--port-base", "26443",
		"--k8s-bin", e.K8sBin, "--coredns", e.CoreDNS)
	up.Dir = e.Root
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	if err := up.Start(); err != nil {
		return err
	}
	pidFile := filepath.Join(l.State().Dir, "c1", "pids", "kube-apiserver.pid")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
	}
	time.Sleep(time.Second)
	_ = up.Process.Kill()
	_ = up.Wait()
	if err := l.Down(context.Background()); err != nil {
		return fmt.Errorf("down after a crash of up: %w", err)
	}
	if left := l.Leftovers(); len(left) > 0 {
		return fmt.Errorf("down after a crash of up left behind: %s", strings.Join(left, "; "))
	}
	return nil
}

func members() []string { return []string{"c1", "c2"} }
