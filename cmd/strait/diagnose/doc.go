// Package diagnose holds five of the people's commands that reach every member with the
// person's own credentials for it (contexts of a kubeconfig, or a kubeconfig file per
// member; members.go): `strait diagnose`, `verify`, `benchmark`, `gather` and
// `uninstall`. They differ in what they write:
//
//   - diagnose (cmd.go, checks.go) looks for what breaks traffic between the members and
//     prints one pass/warn/fail line per check and member, and for each failure what to
//     do. It reads the members' objects (nodes, Strait's Membership, Peers and Gateways,
//     the agent DaemonSet and strait dns Deployment, CoreDNS's Corefile, the ServiceCIDR
//     API), each node's facts by exec in the agent's container (`straitd probe node`,
//     `straitd probe flows`), and starts probe pods of Strait's own image on every node
//     (`straitd probe serve`; probes.go), from which it dials the other members' probe
//     pods: the source address that arrives tells a masquerading CNI, a don't-fragment
//     datagram the path MTU, a lookup whether clusterset.local is answered; each in every
//     IP family two members share (families.go: a member's are its pod ranges'), the
//     firewall check also from the nodes' nftables rules and fences of both families
//     (firewall.go), the dns check from A and AAAA answers (dns.go). It writes
//     its probe pods in strait-system and nothing else, and removes them (and those a
//     killed run left) before it returns. The judging (checks.go) is pure: it takes
//     what was read and returns the results; the reading holds the clients.
//   - verify (verify.go) writes probe pods and a ClusterIP Service in strait-system,
//     removed at the end, and, to prove a gateway failover, deletes the second member's
//     active gateway's agent pod (its DaemonSet starts another).
//   - benchmark (benchmark.go) writes probe pods, removed at the end.
//   - gather (gather.go) writes nothing in the clusters: a tarball in a local directory
//     of what support needs (objects, events, logs, each agent's kernel dump by exec of
//     `straitd agent --dump`, the Corefile, versions), Secrets read as metadata only.
//   - uninstall (uninstall.go) removes Strait: it deletes the ClusterSets in the hub and
//     waits for their finalizers, then in every member and last in the hub the agent
//     DaemonSet, strait dns's block in CoreDNS's Corefile where strait dns left it,
//     what is labelled app.kubernetes.io/part-of=strait outside strait-system (webhook
//     configurations, admission policies, roles and their bindings), the strait-system
//     namespace and the CRDs (Strait's and the Multi-Cluster Services API's); with
//     --suspend-gitops it first suspends the Flux Kustomization or Argo CD Application
//     that applies the ClusterSet (spec.suspend, the automated sync).
//
// Every call into a node (an exec, a log read, a probe pod started) goes through the
// API server to the node's kubelet and has a deadline (deadline.go: --node-timeout,
// --pod-start-timeout): a node that misses one is asked nothing more in that run and is
// a failed "nodes" line naming it and what to do, and the rest runs without it, so that
// a hung node never hangs a command.
package diagnose
