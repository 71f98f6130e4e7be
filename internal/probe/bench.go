package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BenchPort is where a probe pod serves strait benchmark's measurements, TCP: apart from
// Port, whose server answers every connection at once and closes it.
const BenchPort = 4244

// The first line a benchmark client sends says what it measures.
const (
	benchSink = "sink"
	benchEcho = "echo"
)

// echoSize is a latency probe's message: small, as a request of an RPC is.
const echoSize = 64

// Throughput is what a benchmark client measured sending to a probe server for a while:
// the bytes the server received and the time between its first and its last byte.
type Throughput struct {
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	BitsPerSecond float64 `json:"bitsPerSecond"`
}

// Latency is the round trips of small messages on one TCP connection, in microseconds.
type Latency struct {
	Count int     `json:"count"`
	Min   float64 `json:"minMicros"`
	Avg   float64 `json:"avgMicros"`
	P50   float64 `json:"p50Micros"`
	P99   float64 `json:"p99Micros"`
	Max   float64 `json:"maxMicros"`
}

// ServeBench serves benchmark connections on addr (":4244") until ctx ends. A
// connection starts with a line: "sink" makes the server read until the client closes
// its side, then answer "BYTES NANOSECONDS" (the time between the first and the last
// byte it read); "echo" makes it send back every 64-byte message it reads.
func ServeBench(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	return acceptEach(ctx, ln, func(c net.Conn) { go serveBench(c) })
}

func serveBench(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 256<<10)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	switch strings.TrimSpace(line) {
	case benchSink:
		// Generous: the client decides how long it sends.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Minute))
		buf := make([]byte, 256<<10)
		var n int64
		var first, last time.Time
		for {
			k, err := r.Read(buf)
			if k > 0 {
				if n == 0 {
					first = time.Now()
				}
				n += int64(k)
				last = time.Now()
			}
			if err != nil {
				break
			}
		}
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "%d %d\n", n, last.Sub(first).Nanoseconds())
	case benchEcho:
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Minute))
		buf := make([]byte, echoSize)
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

// MeasureThroughput sends as fast as TCP lets it to a benchmark server for d and returns
// what the server received and in how long.
func MeasureThroughput(ctx context.Context, addr string, d, timeout time.Duration) (Throughput, error) {
	dl := net.Dialer{Timeout: timeout}
	c, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Throughput{}, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, benchSink+"\n"); err != nil {
		return Throughput{}, err
	}
	buf := make([]byte, 128<<10)
	end := time.Now().Add(d)
	_ = c.SetWriteDeadline(end.Add(timeout))
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			return Throughput{}, fmt.Errorf("sending to %s: %w", addr, err)
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return Throughput{}, err
	}
	// The server answers once it has read what is still on its way.
	_ = c.SetReadDeadline(time.Now().Add(timeout + 30*time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Throughput{}, fmt.Errorf("reading what %s received: %w", addr, err)
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return Throughput{}, fmt.Errorf("%s answered %q, want BYTES NANOSECONDS", addr, line)
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Throughput{}, fmt.Errorf("%s answered %q: %w", addr, strings.TrimSpace(line), err)
	}
	if n == 0 || ns <= 0 {
		return Throughput{}, fmt.Errorf("%s answered %q: received nothing to measure", addr, strings.TrimSpace(line))
	}
	t := Throughput{Bytes: n, Seconds: float64(ns) / 1e9}
	t.BitsPerSecond = float64(n) * 8 / t.Seconds
	return t, nil
}

// MeasureLatency sends count small messages one after the other on one connection to a
// benchmark server and times each round trip.
func MeasureLatency(ctx context.Context, addr string, count int, timeout time.Duration) (Latency, error) {
	if count < 1 {
		return Latency{}, fmt.Errorf("count %d: want at least 1", count)
	}
	dl := net.Dialer{Timeout: timeout}
	c, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Latency{}, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, benchEcho+"\n"); err != nil {
		return Latency{}, err
	}
	msg, back := make([]byte, echoSize), make([]byte, echoSize)
	rtts := make([]float64, 0, count)
	for i := 0; i < count && ctx.Err() == nil; i++ {
		_ = c.SetDeadline(time.Now().Add(timeout))
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			return Latency{}, err
		}
		if _, err := io.ReadFull(c, back); err != nil {
			return Latency{}, fmt.Errorf("round trip %d to %s: %w", i+1, addr, err)
		}
		rtts = append(rtts, float64(time.Since(start).Nanoseconds())/1e3)
	}
	return summariseRTTs(rtts), ctx.Err()
}

func summariseRTTs(rtts []float64) Latency {
	s := slices.Clone(rtts)
	slices.Sort(s)
	l := Latency{Count: len(s)}
	if len(s) == 0 {
		return l
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	// The nearest rank: the smallest value with at least q of them at or below it.
	at := func(q float64) float64 { return s[max(0, int(math.Ceil(q*float64(len(s))))-1)] }
	l.Min, l.Max, l.Avg, l.P50, l.P99 = s[0], s[len(s)-1], sum/float64(len(s)), at(0.5), at(0.99)
	return l
}
