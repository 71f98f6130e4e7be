// Package gateway is the gateway role of the agent on nodes matching the Membership's
// gateway selector: the election of the active gateway on one coordination.k8s.io Lease
// per cluster, the routes the active gateway sends remote CIDRs through (pure, from the
// cable driver's Router), and the cable's overhead for MTU computation. It writes only
// that Lease; it does not touch the kernel or other API objects: the agent applies what
// it computes and converges its data path when Active changes.
//
// The election is its own, not client-go's LeaderElector, which makes every standby poll
// the Lease every retry period: a crash then cost the Lease duration plus up to a retry
// period, and a release up to a retry period. Here a standby watches the one Lease (an
// informer with a field selector) and
//   - takes a released Lease (holder cleared on SIGTERM) as soon as the watch shows it;
//   - otherwise sleeps until the holder's term runs out, counted on its own clock from
//     when it last saw the Lease change (so node clocks need not agree), and then writes.
//
// Every write is an Update carrying the resourceVersion it was computed from: of two
// standbys racing for one term, one gets a conflict; a standby whose view is stale
// (a renewal it has not seen yet) gets one too. The holder renews every RetryPeriod and
// stops being Active RenewDeadline after its last renewal was sent unless a newer one
// succeeded. A standby cannot take over before LeaseDuration after the write that
// renewal made, which it saw after it was sent, and RenewDeadline < LeaseDuration
// (Timing.Validate), so the old holder has stepped down LeaseDuration − RenewDeadline
// before the new one can win, unless the API server gave it no answer and the other
// gateways confirm it answers none of them (WithConfirm): then it holds (stays active,
// renewing every RetryPeriod and asking again) until its renewal gets through, a peer
// reaches the API server, or its renewal shows another holder, as nobody can take the
// Lease through an API server that answers no one.
// Active() turns false by itself RenewDeadline after the last attempt, even if the
// election goroutine is stalled. A holder that steps down at its renew deadline leaves
// its fence open to the end of the last renewal's term and campaigns at once: when the
// API server answers again within that term, it takes its own Lease again and its data
// path never stopped; the agent keeps its data plane in place through such a retake. A
// Lease that disappears is waited out a whole term too, since its holder recreates it
// while its term lasts.
package gateway
