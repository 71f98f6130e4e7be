package main

// machineChange is the reason of the floors left loose (a margin twice the work passes)
// until they are calibrated again on the machine CI now runs on. The development
// machine, CI's too, changed on 2026-12-03 (an AMD EPYC of 2 cores in a Firecracker VM),
// the code not; its first bench-gate run (raw: docs/bench/bench-gate-machine-2026-12-03.txt)
// read MemberObjects, ServeUDP and Compute at 1.91, 2.27 and 1.44 times their calibrated
// cpu-ref/op (the reference loop does not scale as their map walks do), and a graceful
// handover at 942 ms (worst round 1101) after make test's suite and 687 (763) with the
// lab alone, where the machine before read 405. Their margins are widened to keep about
// 1.5 times this run's figure as headroom, Today kept at the calibration runs' median,
// until three runs on this machine replace the calibration (TestFloorsAreTheCalibrationRuns).
const machineChange = "the machine changed and the floor was widened, not yet calibrated again on it"

// floors are make bench-gate's. Today is the median of each figure over the calibration
// runs in docs/bench/bench-gate.txt: three of bench-gate-local made at 14:48-15:01 UTC on
// 2026-11-30 (load average 3-6: a helper session ran envtests and builds beside them
// throughout, on a day the machine ran unchanged code at 1.3-2.5 times the cpu-ns/op of
// the calibration before), and three of bench-gate-lab made on 2026-11-28. The comment
// beside each floor gives the three figures. The margin is chosen by the kind of figure,
// from how far runs strayed from their median (maxdev: the largest |run / median - 1|);
// for wall time it keeps the spread the loaded runs showed:
//
//   - counts (allocs/op, B/op) are work done, whatever the load: the runs agree within
//     0.5 % (ServeUDP's B/op within 5 %). Margin 10 %: a dependency's drift passes, one
//     more allocation per answer or a tenth more work per plan does not.
//   - wall time on this shared machine (ns/op, the export's p99, a graceful handover's
//     gap, which is a watch event and a pass of work): the same code ran up to 13.7
//     times slower in one run than its median (BenchmarkServeUDP 218 us beside the
//     helper's envtests) and 12 times in the calibration before (BenchmarkMemberDigests).
//     Margin max(300 %, 2 x maxdev), rounded up to 50 %: these floors catch a slowdown
//     of several times (an accidentally quadratic pass, a sleep in a round trip), the
//     counts and the CPU figures catch the rest.
//   - CPU time per op in units of a fixed reference work (cpu-ref/op, test/benchcpu),
//     for plan's, the resolver's and the answer's pure computation, the UDP round trip
//     and the source's rebuild. It replaces their cpu-ns/op, which the machine's speed
//     moved beyond any margin: a fresh clone's CI run alone on the machine read Compute,
//     MemberObjects, Resolve and Answer at 1.8, 2.0, 2.3 and 2.5 times their calibrated
//     cpu-ns/op on 2026-11-30, their code unchanged, and failed the gate. Dividing out
//     the reference measured around each loop halved the spread of the calibration runs
//     (Resolve 1.40-1.93 cpu-ref/op where its cpu-ns/op read 325-597, ServeUDP 68-73
//     where it read 16.3-23.2 us, Compute 338-358 thousand where it read 77-92 ms). The
//     margins stay those cpu-ns/op had: 75 % (a pass that does three quarters as much
//     work again fails), the resolver's loop, a few hundred nanoseconds, 100 %, and the
//     source's rebuild 200 % (it read 2.9 times its median beside two busy loops).
//   - a ratio of two servers measured back to back in the same seconds (strait dns
//     against CoreDNS hosts): they share the load. Margin max(25 %, 2 x maxdev), 30 %
//     for the runs' 14 %.
//   - a process's own memory (strait dns's RssAnon): the collector's pacing moves it with
//     the CPU it gets (17.68-22.0 MiB in loaded runs before). Margin max(50 %, 2 x maxdev).
//   - a crash failover's gap: a Lease term of 1 s plus convergence, which the load
//     barely moves (the envtest crash gap 1007-1026 ms, the lab's 1063-1075 ms). Margin
//     max(25 %, 2 x maxdev): a longer term or a slower handover by a quarter fails.
//     The lab's gap gets 50 %: TestFailoverStaysFast saw single rounds of 1.41 s
//     under other sessions' load, which a mean over three rounds at 25 % (1388 ms)
//     would not absorb; 1602 ms still fails a Lease term half as long again.
//
// Twice the work breaks every floor (TestTwiceTheWorkBreaksEveryFloor; a floor may be
// marked Loose, saying why: five are, for machineChange). The wall-time ns/op of ServeUDP and Rebuild,
// which let 26 and 4 times the work pass, are no longer held: their cpu-ref/op floors
// hold the same work. Margins of 100 % and more went to 90 %: Resolve's and Rebuild's
// CPU (their calibration runs strayed 25 % and 13 % from their medians), the export's
// p99, the envtest graceful handover and the lab's graceful gap (a fresh clone's CI run
// of 2026-12-03 read 445 ms, 18 ms and 406.5 / 408 ms, each within 4 % of its median).
//
// Not held: strait dns's latency at a fixed rate and its ratios to CoreDNS (the ratio
// flipped between 0.18 and 4.2 with the load), the VmRSS ratio (CoreDNS's binary's
// resident pages moved it from 0.63 to 0.95), the cable throughput (its rounds swung
// fivefold under the load and its CPU-s per GB counted the other sessions' work too),
// and cpu-ns/op (see above; every run still reports it).
func floors() []floor {
	return []floor{
		// plan, the hub's pure computation over 255 members x 10,000 exports.
		{Bench: "Compute", Unit: "allocs/op", Today: 278192, Margin: 0.10},                             // 278192 in all three
		{Bench: "Compute", Unit: "B/op", Today: 27879997, Margin: 0.10},                                // 27879997, 27880005, 27874712
		{Bench: "Compute", Unit: "cpu-ref/op", Today: 338384, Margin: 1.5, Loose: machineChange},       // 357702, 338014, 338384
		{Bench: "PlannerOneChange", Unit: "allocs/op", Today: 2653, Margin: 0.10},                      // 2653 in all three
		{Bench: "PlannerOneChange", Unit: "B/op", Today: 477652, Margin: 0.10},                         // 477650, 477652, 477652
		{Bench: "PlannerOneChange", Unit: "cpu-ref/op", Today: 13949, Margin: 0.75},                    // 15185, 13949, 12569
		{Bench: "MemberObjects", Unit: "allocs/op", Today: 715240, Margin: 0.10},                       // 715238, 715240, 715240
		{Bench: "MemberObjects", Unit: "B/op", Today: 70650703, Margin: 0.10},                          // 70650569, 70650737, 70650703
		{Bench: "MemberObjects", Unit: "cpu-ref/op", Today: 603798, Margin: 2.5, Loose: machineChange}, // 526708, 665415, 603798
		{Bench: "MemberDigests", Unit: "allocs/op", Today: 103041, Margin: 0.10},                       // 103040, 103041, 103041
		{Bench: "MemberDigests", Unit: "B/op", Today: 4906415, Margin: 0.10},                           // 4906335, 4906417, 4906415
		{Bench: "MemberDigests", Unit: "cpu-ref/op", Today: 236547, Margin: 0.75},                      // 233647, 236547, 283863
		// The hub at 64 members x 10,000 exports (BenchmarkHubScale, in-memory members):
		// the heap the hub's state holds (its record, shared between members where it is
		// equal, and its informers' prints, its planner, its last passes' group digests)
		// and what a change and a resync allocate. Counts, not time. Recalibrated on
		// 2026-11-30 evening, when the hub-heap measure stopped counting the members' own
		// prints, that night, when globalnet's allocation and the digest inputs were
		// taken over, and on 2026-12-01, when the record of the digested kinds came to
		// share its equal parts between members (three runs each at the end of
		// docs/bench/bench-gate.txt).
		{Bench: "HubScale/members=64/hub-heap", Unit: "hub-live-heap-MiB", Today: 30.01, Margin: 0.10},  // 30.01 in all three
		{Bench: "HubScale/members=64/one-member-change", Unit: "B/op", Today: 2005960, Margin: 0.10},    // 2003168, 2005960, 2010576
		{Bench: "HubScale/members=64/one-member-change", Unit: "allocs/op", Today: 14417, Margin: 0.10}, // 14416, 14417, 14426
		{Bench: "HubScale/members=64/full-reconcile", Unit: "B/op", Today: 29110168, Margin: 0.10},      // 29112408, 29109304, 29110168
		{Bench: "HubScale/members=64/full-reconcile", Unit: "allocs/op", Today: 404354, Margin: 0.10},   // 404356, 404344, 404354
		// strait dns: the resolver, the server's answer and a UDP round trip, a rebuild.
		{Bench: "Resolve", Unit: "allocs/op", Today: 1, Margin: 0.10},                                        // 1 in all three
		{Bench: "Resolve", Unit: "B/op", Today: 80, Margin: 0.10},                                            // 80 in all three
		{Bench: "Resolve", Unit: "cpu-ref/op", Today: 1.875, Margin: 0.90},                                   // 1.875, 1.926, 1.401
		{Bench: "Answer", Unit: "allocs/op", Today: 3, Margin: 0.10},                                         // 3 in all three
		{Bench: "Answer", Unit: "B/op", Today: 248, Margin: 0.10},                                            // 248 in all three
		{Bench: "Answer", Unit: "cpu-ref/op", Today: 3.548, Margin: 0.75},                                    // 3.548, 3.805, 3.099
		{Bench: "ServeUDP", Unit: "allocs/op", Today: 18, Margin: 0.10},                                      // 18 in all three
		{Bench: "ServeUDP", Unit: "B/op", Today: 1225, Margin: 0.10},                                         // 1224, 1282, 1225
		{Bench: "ServeUDP", Unit: "cpu-ref/op", Today: 72.74, Margin: 3.0, Loose: machineChange},             // 72.74, 72.92, 68.47
		{Bench: "Rebuild", Unit: "allocs/op", Today: 79, Margin: 0.10},                                       // 79 in all three
		{Bench: "Rebuild", Unit: "B/op", Today: 792144, Margin: 0.10},                                        // 792144, 792143, 792149
		{Bench: "Rebuild", Unit: "cpu-ref/op", Today: 15780, Margin: 0.90},                                   // 13706, 17056, 15780
		{Bench: "DNSAgainstCoreDNSHosts", Unit: "qps-ratio", Today: 2.059, Margin: 0.30, MoreIsBetter: true}, // 2.143, 2.059, 1.767: maxdev 14 %
		{Bench: "DNSAgainstCoreDNSHosts", Unit: "anon-MiB", Today: 21.47, Margin: 0.50},                      // 21.47, 21.54, 21.45
		// The hub: an export until every one of 10 members holds its ServiceImport.
		{Bench: "ExportToImport", Unit: "p99-ms", Today: 461.8, Margin: 0.90}, // 461.8, 448.7, 510.6; 445 in a CI run of 2026-12-03
		// Agents against an envtest API server: the plain node's routes follow the Lease.
		{Bench: "Failover", Unit: "ms-crash", Today: 1009, Margin: 0.25},  // 1009, 1026, 1007: maxdev 2 %
		{Bench: "Failover", Unit: "ms-graceful", Today: 19, Margin: 0.90}, // 15, 19, 29: maxdev 53 %; 18 in a CI run of 2026-12-03
		// The lab: c1 -> c2 GETs while c2's active gateway agent crashes or stops.
		// Each of the benchmark's rounds also fails it over the tests' bounds (3 s, 1 s); the
		// worst round is held here, a mean of two could hide one (issue 33).
		{Bench: "GatewayFailover", Unit: "ms-gap-crash", Today: 1068, Margin: 0.50},                              // 1063, 1074, 1068: maxdev 1 %; 1108-1129 on 2026-11-26
		{Bench: "GatewayFailover", Unit: "ms-gap-crash-worst", Today: 1070, Margin: 0.50},                        // 1064, 1075, 1070: maxdev 1 %
		{Bench: "GatewayFailover", Unit: "ms-gap-graceful", Today: 404.5, Margin: 3.0, Loose: machineChange},     // 404.5, 404.5, 334.5: maxdev 17 %; 157-415 on 2026-11-26; 406.5 in a CI run of 2026-12-03
		{Bench: "GatewayFailover", Unit: "ms-gap-graceful-worst", Today: 405, Margin: 3.0, Loose: machineChange}, // 405, 406, 404: maxdev 0 %; rounds of 507 ms seen on 2026-11-26; 408 in a CI run of 2026-12-03
	}
}
