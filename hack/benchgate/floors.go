package main

// gracefulNoise is why the lab's graceful handover gap is held loosely: it is a watch
// event and a pass of work on a machine the lab's three control planes share, and the
// same code read it at 388.5-786 ms (worst rounds 461-869) in the calibration runs, the
// lab alone, and at 942 ms (worst 1101) after make test's suite, where CI measures it. A
// margin that passes every one of those lets twice the work pass; the crash gap, a Lease
// term and the same convergence, holds the handover's work, and TestGatewayFailover and
// TestFailoverStaysFast bound every round's outage.
const gracefulNoise = "the graceful gap, a watch event and a pass of work, read 388.5-1101 ms for the same code on the CI machine"

// floors are make bench-gate's. Today is the median of each figure over the calibration
// runs in docs/bench/bench-gate.txt: three of bench-gate-local and three of
// bench-gate-lab, alternated, on the machine CI runs on (2 cores, an AMD EPYC in a
// Firecracker VM), nothing else running, on 2026-12-03 21:17-21:39 UTC. The comment beside
// each floor gives the three figures and maxdev, the largest |run / median - 1|. The
// margin is chosen by the kind of figure, from how far runs strayed from their median;
// for wall time it keeps the spread loaded runs showed:
//
//   - counts (allocs/op, B/op) are work done, whatever the load: the runs agree within
//     0.5 %. Margin 10 %: a dependency's drift passes, one more allocation per answer
//     or a tenth more work per plan does not.
//   - wall time (the export's p99, the envtest graceful handover): the runs strayed up
//     to 45 % from their median (the handover's 18-29 ms), and loaded runs on the
//     machine before up to 13.7 times. Margin 90 %: twice the time fails, and so does a
//     slowdown of several times (an accidentally quadratic pass, a sleep in a round trip).
//   - CPU time per op in units of a fixed reference work (cpu-ref/op, test/benchcpu),
//     for plan's, the resolver's and the answer's pure computation, the UDP round trip
//     and the source's rebuild: the reference is measured around each loop, so the
//     machine's speed of the moment divides out (the runs here strayed up to 18 %).
//     It does not divide out a change of machine: the map walks of MemberObjects read
//     0.53-0.67 million on the machine before, 1.12-1.32 here, so a new machine needs a
//     calibration of its own. Margin 75 %, the resolver's few hundred nanoseconds and
//     the rebuild 90 %.
//   - a ratio of two servers measured back to back in the same seconds (strait dns
//     against CoreDNS hosts): they share the load. Margin max(25 %, 2 x maxdev), 30 %
//     (the runs strayed 3 %, 14 % on the machine before).
//   - a process's own memory (strait dns's RssAnon): the collector's pacing moves it with
//     the CPU it gets. Margin max(50 %, 2 x maxdev).
//   - a crash failover's gap: a Lease term of 1 s plus convergence (envtest 976-1024 ms).
//     Margin 25 %: a longer term or a slower handover by a quarter fails. The lab's gap
//     (1086-1282 ms, worst rounds 1096-1448) gets 50 %: its convergence crosses the
//     lab's nodes and WireGuard's roaming, and twice the gap still fails.
//
// Twice the work breaks every floor (TestTwiceTheWorkBreaksEveryFloor) but the two the
// lab's graceful handover holds (marked Loose: gracefulNoise). The wall-time ns/op of
// ServeUDP and Rebuild, which let 26 and 4 times the work pass, are not held: their
// cpu-ref/op floors hold the same work.
//
// Not held: strait dns's latency at a fixed rate and its ratios to CoreDNS (the ratio
// flipped between 0.18 and 4.2 with the load), the VmRSS ratio (CoreDNS's binary's
// resident pages moved it from 0.63 to 0.95), the cable throughput (its rounds swung
// fivefold under the load and its CPU-s per GB counted the other sessions' work too),
// and cpu-ns/op (see above; every run still reports it).
func floors() []floor {
	return []floor{
		// plan, the hub's pure computation over 255 members x 10,000 exports.
		{Bench: "Compute", Unit: "allocs/op", Today: 279662, Margin: 0.10},          // 279661, 279662, 279662: maxdev 0 %
		{Bench: "Compute", Unit: "B/op", Today: 27853672, Margin: 0.10},             // 27848386, 27853672, 27854893: maxdev 0 %
		{Bench: "Compute", Unit: "cpu-ref/op", Today: 534367, Margin: 0.75},         // 476043, 535563, 534367: maxdev 11 %
		{Bench: "PlannerOneChange", Unit: "allocs/op", Today: 2645, Margin: 0.10},   // 2645 in all 3
		{Bench: "PlannerOneChange", Unit: "B/op", Today: 463387, Margin: 0.10},      // 463387, 463386, 463387: maxdev 0 %
		{Bench: "PlannerOneChange", Unit: "cpu-ref/op", Today: 10320, Margin: 0.75}, // 10590, 9244, 10320: maxdev 10 %
		{Bench: "MemberObjects", Unit: "allocs/op", Today: 715240, Margin: 0.10},    // 715240, 715239, 715241: maxdev 0 %
		{Bench: "MemberObjects", Unit: "B/op", Today: 70650808, Margin: 0.10},       // 70650825, 70650685, 70650808: maxdev 0 %
		{Bench: "MemberObjects", Unit: "cpu-ref/op", Today: 1225984, Margin: 0.75},  // 1120344, 1225984, 1317170: maxdev 9 %
		{Bench: "MemberDigests", Unit: "allocs/op", Today: 103052, Margin: 0.10},    // 103053, 103052, 103051: maxdev 0 %
		{Bench: "MemberDigests", Unit: "B/op", Today: 5015794, Margin: 0.10},        // 5016117, 5015794, 5015669: maxdev 0 %
		{Bench: "MemberDigests", Unit: "cpu-ref/op", Today: 311842, Margin: 0.75},   // 341283, 294629, 311842: maxdev 9 %
		// The hub at 64 members x 10,000 exports (BenchmarkHubScale, in-memory members):
		// the heap the hub's state holds (its record, shared between members where it is
		// equal, and its informers' prints, its planner, its last passes' group digests)
		// and what a change and a resync allocate. Counts, not time. Recalibrated on
		// 2026-11-30 evening, when the hub-heap measure stopped counting the members' own
		// prints, that night, when globalnet's allocation and the digest inputs were
		// taken over, and on 2026-12-01, when the record of the digested kinds came to
		// share its equal parts between members (three runs each at the end of
		// docs/bench/bench-gate.txt).
		{Bench: "HubScale/members=64/hub-heap", Unit: "hub-live-heap-MiB", Today: 30.01, Margin: 0.10},  // 30.01 in all 3
		{Bench: "HubScale/members=64/one-member-change", Unit: "B/op", Today: 1947208, Margin: 0.10},    // 1945000, 1947320, 1947208: maxdev 0 %
		{Bench: "HubScale/members=64/one-member-change", Unit: "allocs/op", Today: 14211, Margin: 0.10}, // 14202, 14212, 14211: maxdev 0 %
		{Bench: "HubScale/members=64/full-reconcile", Unit: "B/op", Today: 29082712, Margin: 0.10},      // 29082712, 29082712, 29082760: maxdev 0 %
		{Bench: "HubScale/members=64/full-reconcile", Unit: "allocs/op", Today: 404280, Margin: 0.10},   // 404280, 404280, 404281: maxdev 0 %
		// strait dns: the resolver, the server's answer and a UDP round trip, a rebuild.
		{Bench: "Resolve", Unit: "allocs/op", Today: 1, Margin: 0.10},                                        // 1 in all 3
		{Bench: "Resolve", Unit: "B/op", Today: 80, Margin: 0.10},                                            // 80 in all 3
		{Bench: "Resolve", Unit: "cpu-ref/op", Today: 1.276, Margin: 0.90},                                   // 1.394, 1.276, 1.243: maxdev 9 %
		{Bench: "Answer", Unit: "allocs/op", Today: 3, Margin: 0.10},                                         // 3 in all 3
		{Bench: "Answer", Unit: "B/op", Today: 248, Margin: 0.10},                                            // 248 in all 3
		{Bench: "Answer", Unit: "cpu-ref/op", Today: 3.387, Margin: 0.75},                                    // 3.306, 3.387, 3.4: maxdev 2 %
		{Bench: "ServeUDP", Unit: "allocs/op", Today: 18, Margin: 0.10},                                      // 18 in all 3
		{Bench: "ServeUDP", Unit: "B/op", Today: 1228, Margin: 0.10},                                         // 1228, 1230, 1227: maxdev 0 %
		{Bench: "ServeUDP", Unit: "cpu-ref/op", Today: 154.4, Margin: 0.75},                                  // 153.3, 168.2, 154.4: maxdev 9 %
		{Bench: "Rebuild", Unit: "allocs/op", Today: 79, Margin: 0.10},                                       // 79 in all 3
		{Bench: "Rebuild", Unit: "B/op", Today: 792143, Margin: 0.10},                                        // 792142, 792146, 792143: maxdev 0 %
		{Bench: "Rebuild", Unit: "cpu-ref/op", Today: 22093, Margin: 0.90},                                   // 21615, 22093, 26093: maxdev 18 %
		{Bench: "DNSAgainstCoreDNSHosts", Unit: "qps-ratio", Today: 1.894, Margin: 0.30, MoreIsBetter: true}, // 1.836, 1.894, 1.922: maxdev 3 %
		{Bench: "DNSAgainstCoreDNSHosts", Unit: "anon-MiB", Today: 22.07, Margin: 0.50},                      // 22.07, 22.28, 22.05: maxdev 1 %
		// The hub: an export until every one of 10 members holds its ServiceImport.
		{Bench: "ExportToImport", Unit: "p99-ms", Today: 865.4, Margin: 0.90}, // 865.4, 794.5, 867.6: maxdev 8 %
		// Agents against an envtest API server: the plain node's routes follow the Lease.
		{Bench: "Failover", Unit: "ms-crash", Today: 1020, Margin: 0.25},  // 1024, 1020, 976: maxdev 4 %
		{Bench: "Failover", Unit: "ms-graceful", Today: 20, Margin: 0.90}, // 20, 18, 29: maxdev 45 %
		// The lab: c1 -> c2 GETs while c2's active gateway agent crashes or stops.
		// Each of the benchmark's rounds also fails it over the tests' bounds (3 s, 1 s); the
		// worst round is held here, a mean of two could hide one (issue 33).
		{Bench: "GatewayFailover", Unit: "ms-gap-crash", Today: 1239, Margin: 0.50},                              // 1086, 1282, 1239: maxdev 12 %
		{Bench: "GatewayFailover", Unit: "ms-gap-crash-worst", Today: 1407, Margin: 0.50},                        // 1096, 1448, 1407: maxdev 22 %
		{Bench: "GatewayFailover", Unit: "ms-gap-graceful", Today: 435.5, Margin: 2.0, Loose: gracefulNoise},     // 435.5, 786, 388.5: maxdev 80 %
		{Bench: "GatewayFailover", Unit: "ms-gap-graceful-worst", Today: 494, Margin: 2.0, Loose: gracefulNoise}, // 461, 869, 494: maxdev 76 %
	}
}
