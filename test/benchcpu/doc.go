// Package benchcpu reports the CPU time a benchmark's timed part used, per op, as the
// metric cpu-ns/op: the process's user and system time (every thread's, the garbage
// collector's and the server goroutines' included) over the loop. The work a loop does
// costs about the same CPU time whatever else the machine runs, where its wall time
// (ns/op) stretched twelvefold while other sessions shared the two cores: the bench
// gate holds cpu-ns/op to a margin that catches a slowdown by half, which ns/op could
// only hold at sixteen times.
package benchcpu
