// Package agentcmd holds the node's two commands of straitd: `straitd agent` (the
// DaemonSet on every node) and `straitd charon` (strongSwan's charon as the agent's
// IPsec sidecar on gateway nodes). It reads flags and opens what the process needs — the
// kernel handle of the node's network namespace, the member's client, the cable driver
// factory — and hands them to nodeagent/agent, nodeagent/cable/drivers and
// nodeagent/cable/ipsec, where the logic lives; this package must not grow any.
package agentcmd
