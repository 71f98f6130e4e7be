// Package gateway is the gateway role of the agent on nodes matching the Membership's
// gateway selector: leader election on one coordination.k8s.io Lease per cluster
// (tuned for fast failover, released on graceful shutdown), the routes the active
// gateway sends remote CIDRs through (pure, from the cable driver's Router), and the
// cable's overhead for MTU computation. It does not touch the kernel or write API objects
// itself: the agent applies what it computes.
package gateway
