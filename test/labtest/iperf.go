package labtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/workload"
)

// IPerf3Image names the sample iperf3 server for PodOn (lab.SampleContainer).
const IPerf3Image = "strait.io/lab/iperf3"

// IPerf3Interval is how often an iperf3 client reports what it sent: a stall (a black
// hole that takes every full-sized packet) shows as an interval with nothing sent.
const IPerf3Interval = 500 * time.Millisecond

// BlackHoleStall is the stall that tells a black hole: two intervals in a row without a
// byte. A black hole stalls every interval after the first window (33, 0, 0, 0 Mbit/s
// in TestIPerf3TellsABlackHoleFromAPath); a userspace cable starved by a saturated
// 2-core machine was seen to stall one half-second in a transfer of 102 Mbit/s.
const BlackHoleStall = 2 * IPerf3Interval

// IPerf3Client is one iperf3 client run (one TCP stream) from a network namespace.
type IPerf3Client struct {
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr bytes.Buffer
	what           string
}

// IPerf3Result is what a client run measured.
type IPerf3Result struct {
	// BitsPerSecond and Bytes are what the server received in the measured seconds.
	BitsPerSecond, Bytes float64
	// SlowestInterval is the fewest bits per second the client sent in any measured
	// IPerf3Interval: 0 is a stall.
	SlowestInterval float64
	// LongestStall is the longest run of measured intervals in which the client sent
	// nothing: a black hole stalls every interval after its first window, a machine
	// that starves a userspace cable for a moment one.
	LongestStall time.Duration
}

// StartIPerf3 starts iperf3 -c in network namespace ns (a real pod's /proc/<pid>/ns/net,
// which ip-netns(8) refuses as a name, or a named namespace) against the sample iperf3
// server at server: seconds measured after omit seconds of TCP slow start left out. A
// run still going timeout after its start is killed, so a transfer that hangs fails
// instead of holding the test.
func StartIPerf3(ns, server string, seconds, omit int, timeout time.Duration) (*IPerf3Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	c := &IPerf3Client{cancel: cancel, what: fmt.Sprintf("iperf3 -c %s from %s", server, ns)}
	c.cmd = exec.CommandContext(ctx, "nsenter", "--net="+netns.Path(ns), "iperf3", "-c", server,
		"-p", strconv.Itoa(workload.IPerf3Port), "-t", strconv.Itoa(seconds), "-O", strconv.Itoa(omit),
		"-i", strconv.FormatFloat(IPerf3Interval.Seconds(), 'f', -1, 64), "--connect-timeout", "3000", "-J")
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", c.what, err)
	}
	return c, nil
}

// Wait waits for the run to end and reads its result.
func (c *IPerf3Client) Wait() (IPerf3Result, error) {
	defer c.cancel()
	if err := c.cmd.Wait(); err != nil {
		return IPerf3Result{}, fmt.Errorf("%s: %w: %s%s", c.what, err, c.stdout.String(), c.stderr.String())
	}
	return parseIPerf3(c.what, c.stdout.Bytes())
}

// IPerf3 is one StartIPerf3 and its Wait.
func IPerf3(ns, server string, seconds, omit int, timeout time.Duration) (IPerf3Result, error) {
	c, err := StartIPerf3(ns, server, seconds, omit, timeout)
	if err != nil {
		return IPerf3Result{}, err
	}
	return c.Wait()
}

// parseIPerf3 reads an iperf3 client's JSON report (-J).
func parseIPerf3(what string, out []byte) (IPerf3Result, error) {
	var r struct {
		Intervals []struct {
			Sum struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Omitted       bool    `json:"omitted"`
			} `json:"sum"`
		} `json:"intervals"`
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Bytes         float64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return IPerf3Result{}, fmt.Errorf("%s: its output: %w: %q", what, err, out)
	}
	if r.Error != "" {
		return IPerf3Result{}, fmt.Errorf("%s: %s", what, r.Error)
	}
	got := IPerf3Result{BitsPerSecond: r.End.SumReceived.BitsPerSecond, Bytes: r.End.SumReceived.Bytes, SlowestInterval: -1}
	var intervals []string
	var stall time.Duration
	for _, in := range r.Intervals {
		if in.Sum.Omitted {
			continue
		}
		intervals = append(intervals, strconv.FormatFloat(in.Sum.BitsPerSecond/1e6, 'f', 0, 64))
		if got.SlowestInterval < 0 || in.Sum.BitsPerSecond < got.SlowestInterval {
			got.SlowestInterval = in.Sum.BitsPerSecond
		}
		if in.Sum.BitsPerSecond > 0 {
			stall = 0
		} else {
			stall += IPerf3Interval
		}
		got.LongestStall = max(got.LongestStall, stall)
	}
	if got.Bytes == 0 || got.SlowestInterval < 0 {
		return got, fmt.Errorf("%s received nothing (%d intervals: %s Mbit/s)", what, len(intervals), strings.Join(intervals, " "))
	}
	return got, nil
}
