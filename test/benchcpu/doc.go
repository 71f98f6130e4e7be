// Package benchcpu reports the CPU time a benchmark's timed part used, per op, as the
// metric cpu-ns/op: the process's user and system time (every thread's, the garbage
// collector's and the server goroutines' included) over the loop. The work a loop does
// costs about the same CPU time whatever else the machine runs, where its wall time
// (ns/op) stretched twelvefold while other sessions shared the two cores.
//
// The machine itself is not as fast every day: a fresh clone's CI run read unchanged
// code at 1.3 to 2.5 times its calibrated cpu-ns/op, with no steal time. So it also
// reports cpu-ref/op, the same time in units of a fixed reference work (maps, sorting,
// hashing, no allocation) measured just before and just after the loop, outside the
// timer: the machine's speed in those seconds divided out. The bench gate holds
// cpu-ref/op to a margin that catches a slowdown by half.
package benchcpu
