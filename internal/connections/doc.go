// Package connections summarises a member's Peers as the ClusterSet's status shows
// them: the connections that have a state (the member's active gateway wrote one),
// those not Connected first, and how many of them are Connected.
//
// Both sides of the member's report use it: strait dns summarises the Peers it watches
// into the Membership's status.connections (Summarize), and the hub's plan lists a
// cluster's connections from that summary, or from the Peers themselves where it has
// them (a member without a report, an observed file): List gives the same entries
// either way, since the summary keeps as many as the status shows of one cluster at
// most (straitv1.MaxReportedConnections).
//
// It is pure.
package connections
