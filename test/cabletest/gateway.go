package cabletest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/nodeagent/cable"
)

// helperEnv tells a re-executed test binary to serve as a gateway agent.
const helperEnv = "STRAIT_CABLE_GATEWAY"

// request and response are the lines between a test and its gateway processes (on fds 3
// and 4, so the test binary's own output stays out of the way).
type request struct {
	Op      string         `json:"op"`
	Local   cable.Local    `json:"local"`
	Remotes []cable.Remote `json:"remotes"`
}

type response struct {
	Err         string             `json:"err,omitempty"`
	PublicKey   string             `json:"publicKey,omitempty"`
	Connections []cable.Connection `json:"connections,omitempty"`
	Dump        string             `json:"dump,omitempty"`
}

// Agent is what a gateway process runs: the driver and a dump of the driver's own state
// beyond the kernel's links and routes (peers, SAs), for "converging twice changes
// nothing" checks.
type Agent struct {
	Driver cable.Driver
	Dump   func(ctx context.Context) (string, error)
}

// ServeGatewayIfChild must be called first in the driver test's TestMain. In a gateway
// process it serves requests with the Agent newAgent builds and exits; in the test process
// it returns at once.
func ServeGatewayIfChild(newAgent func() (*Agent, error)) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	if err := serve(newAgent); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serve(newAgent func() (*Agent, error)) error {
	// ip netns exec gave this process its own mount namespace; a private /run keeps the
	// UAPI sockets and pid files of gateways in different namespaces apart, and vanishes
	// with the process.
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", 0, "size=4m"); err != nil {
		return fmt.Errorf("private /run: %w", err)
	}
	in := bufio.NewScanner(os.NewFile(3, "requests"))
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.NewFile(4, "responses"))
	agent, err := newAgent()
	if err != nil {
		return err
	}
	ctx := context.Background()
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return err
		}
		var resp response
		var opErr error
		switch req.Op {
		case "hello":
			resp.PublicKey = agent.Driver.PublicKey()
		case "converge":
			opErr = agent.Driver.Converge(ctx, req.Local, req.Remotes)
		case "connections":
			resp.Connections, opErr = agent.Driver.Connections(ctx)
		case "dump":
			resp.Dump, opErr = dumpKernel(Routing)
			if opErr == nil && agent.Dump != nil {
				var d string
				d, opErr = agent.Dump(ctx)
				resp.Dump += d
			}
		case "cleanup":
			opErr = agent.Driver.Cleanup(ctx)
			if opErr == nil {
				resp.Dump, opErr = listFiles("/run")
			}
		case "exit":
			return nil
		default:
			opErr = fmt.Errorf("unknown op %q", req.Op)
		}
		if opErr != nil {
			resp.Err = opErr.Error()
		}
		if err := out.Encode(resp); err != nil {
			return err
		}
	}
	return in.Err()
}

// Gateway is a running gateway process in the test.
type Gateway struct {
	cmd  *exec.Cmd
	req  *json.Encoder
	resp *bufio.Scanner
	w    io.Closer
	done chan error
}

// StartGateway re-executes the test binary inside namespace ns as a gateway agent; env is
// added to its environment (the driver's settings). It is killed when t ends.
func StartGateway(t testing.TB, ns string, env ...string) *Gateway {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"=1"), env...)
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = reqR.Close()
	_ = respW.Close()
	g := &Gateway{cmd: cmd, req: json.NewEncoder(reqW), w: reqW, resp: bufio.NewScanner(respR), done: make(chan error, 1)}
	g.resp.Buffer(make([]byte, 1<<20), 1<<20)
	go func() { g.done <- cmd.Wait(); _ = respR.Close() }()
	t.Cleanup(g.Kill)
	return g
}

func (g *Gateway) call(req request) (response, error) {
	if err := g.req.Encode(req); err != nil {
		return response{}, fmt.Errorf("gateway %s: %w", req.Op, err)
	}
	if !g.resp.Scan() {
		if err := g.resp.Err(); err != nil {
			return response{}, fmt.Errorf("gateway %s: no answer: %w", req.Op, err)
		}
		return response{}, fmt.Errorf("gateway %s: no answer (the process ended)", req.Op)
	}
	var resp response
	if err := json.Unmarshal(g.resp.Bytes(), &resp); err != nil {
		return response{}, fmt.Errorf("gateway %s: %w", req.Op, err)
	}
	if resp.Err != "" {
		return resp, errors.New(resp.Err)
	}
	return resp, nil
}

// PublicKey of the gateway's driver.
func (g *Gateway) PublicKey() (string, error) {
	r, err := g.call(request{Op: "hello"})
	return r.PublicKey, err
}

// Converge runs the driver's Converge and returns its error.
func (g *Gateway) Converge(local cable.Local, remotes ...cable.Remote) error {
	if remotes == nil {
		remotes = []cable.Remote{}
	}
	_, err := g.call(request{Op: "converge", Local: local, Remotes: remotes})
	return err
}

// Connections runs the driver's Connections.
func (g *Gateway) Connections() ([]cable.Connection, error) {
	r, err := g.call(request{Op: "connections"})
	return r.Connections, err
}

// Dump is the gateway's kernel state (links, addresses, Strait's table, FDB) and the
// driver's own state.
func (g *Gateway) Dump() (string, error) {
	r, err := g.call(request{Op: "dump"})
	return r.Dump, err
}

// Cleanup runs the driver's Cleanup and returns the files then left under the gateway
// process's /run.
func (g *Gateway) Cleanup() (string, error) {
	r, err := g.call(request{Op: "cleanup"})
	return r.Dump, err
}

// Exit ends the gateway process gracefully and waits for it.
func (g *Gateway) Exit() error {
	_ = g.req.Encode(request{Op: "exit"})
	_ = g.w.Close()
	select {
	case err := <-g.done:
		g.done <- err
		return err
	case <-time.After(10 * time.Second):
		g.Kill()
		return errors.New("gateway process did not exit")
	}
}

// Kill ends the gateway process at once, as a crash would.
func (g *Gateway) Kill() {
	if g.cmd.ProcessState == nil {
		_ = g.cmd.Process.Kill()
	}
	_ = g.w.Close()
	select {
	case err := <-g.done:
		g.done <- err
	case <-time.After(10 * time.Second):
	}
}
