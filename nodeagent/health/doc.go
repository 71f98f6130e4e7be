// Package health measures a peer through the tunnel: ICMP echo from this gateway's
// health-check IP to the remote gateway's, a few probes per round, giving round-trip
// time and loss. The agent writes the result into Peer status. It owns one ICMP socket
// per probe round and nothing else.
package health
