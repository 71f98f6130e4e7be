package ipsec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/strongswan/govici/vici"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/cabletest"
)

// The lab keeps its state under /run, and so does a pod whose emptyDir is mounted there:
// charon's private /run must not hide its VICI socket from the agent, which shares the
// host's /run. (A fresh `make lab` had no ipsec: the sidecar refused such a directory.)
func TestCharonDirUnderRun(t *testing.T) {
	cabletest.RequireCharon(t)
	ns := netns.New(t, "charon")
	parent, err := os.MkdirTemp("/run", "strait-test-charon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	dir := filepath.Join(parent, "gw")

	socket, stop := cabletest.StartCharon(t, ns.Name, dir, port)
	s, err := vici.NewSession(vici.WithSocketPath(socket))
	if err != nil {
		t.Fatalf("the agent's view of %s: %v", socket, err)
	}
	m, err := s.Call(context.Background(), "version", nil)
	_ = s.Close()
	if err != nil || m.Get("daemon") != "charon" {
		t.Fatalf("VICI version through %s: %v %v", socket, m, err)
	}
	stop() // fails t if charon leaves a file in dir
}
