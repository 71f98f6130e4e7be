package ipsec_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/test/cabletest"
)

// viciEnv hands a gateway process its charon's VICI socket.
const viciEnv = "STRAIT_TEST_VICI_SOCKET"

const port = 4599

func TestMain(m *testing.M) {
	cabletest.RunCharonIfChild()
	cabletest.ServeGatewayIfChild(func() (*cabletest.Agent, error) {
		d, err := ipsec.New(ipsec.Config{VICISocket: os.Getenv(viciEnv), Routing: cabletest.Routing})
		if err != nil {
			return nil, err
		}
		return &cabletest.Agent{Driver: d, Dump: func(ctx context.Context) (string, error) {
			return dumpSAs(ctx, os.Getenv(viciEnv))
		}}, nil
	})
	os.Exit(m.Run())
}

// dumpSAs lists charon's connections and SAs with their IDs (without counters), so a
// rekey or a re-established SA shows as a change.
func dumpSAs(ctx context.Context, socket string) (string, error) {
	s, err := vici.NewSession(vici.WithSocketPath(socket))
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close() }()
	var lines []string
	for m, err := range s.CallStreaming(ctx, "list-conns", "list-conn", nil) {
		if err != nil {
			return "", err
		}
		for _, name := range m.Keys() {
			lines = append(lines, "conn "+name)
		}
	}
	for m, err := range s.CallStreaming(ctx, "list-sas", "list-sa", nil) {
		if err != nil {
			return "", err
		}
		for _, name := range m.Keys() {
			sa := m.Get(name).(*vici.Message)
			line := fmt.Sprintf("ike %s #%v %v %v", name, sa.Get("uniqueid"), sa.Get("state"), sa.Get("remote-host"))
			if children, ok := sa.Get("child-sas").(*vici.Message); ok {
				for _, k := range children.Keys() {
					c := children.Get(k).(*vici.Message)
					line += fmt.Sprintf(" child %v #%v %v", c.Get("name"), c.Get("uniqueid"), c.Get("state"))
				}
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

var suite = cabletest.Suite{
	Port:           port,
	PSK:            []byte("a pre-shared key only this test knows"),
	ConnectTimeout: 20 * time.Second,
	Overheads:      cable.Overheads{IPv4: 100, IPv6: 120},
	IPv6Underlay:   true,
	Setup: func(t testing.TB, _ *cabletest.Lab, s cabletest.Site) ([]string, func()) {
		socket, stop := cabletest.StartCharon(t, s.GatewayNS, filepath.Join(t.TempDir(), s.ClusterID), port)
		return []string{viciEnv + "=" + socket}, stop
	},
}

func TestCable(t *testing.T) {
	cabletest.RequireCharon(t)
	cabletest.Run(t, suite)
}

func TestCableThroughOneToOneNAT(t *testing.T) {
	cabletest.RequireCharon(t)
	cabletest.RunNAT(t, suite, cabletest.NATOneToOne)
}

func TestCableBehindMasquerade(t *testing.T) {
	cabletest.RequireCharon(t)
	cabletest.RunNAT(t, suite, cabletest.NATMasquerade)
}

func BenchmarkThroughput(b *testing.B) {
	cabletest.RequireCharon(b)
	cabletest.Throughput(b, suite)
}
