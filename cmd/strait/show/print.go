package show

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
)

// Report is what `strait show VIEW -o json|yaml` prints: the views asked for, what
// should be looked at, and the members that could not be read.
type Report struct {
	ClusterSet  string        `json:"clusterSet"`
	Client      *Version      `json:"client,omitempty"`
	Connections []Connection  `json:"connections,omitempty"`
	Gateways    []GatewayNode `json:"gateways,omitempty"`
	Endpoints   []Endpoint    `json:"endpoints,omitempty"`
	Networks    []Network     `json:"networks,omitempty"`
	Exports     []Export      `json:"exports,omitempty"`
	Imports     []Import      `json:"imports,omitempty"`
	Versions    []Version     `json:"versions,omitempty"`
	// Findings are what an operator should look at: each one makes the exit status 1.
	Findings []string `json:"findings,omitempty"`
	// Unreadable members make the exit status 2.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// report builds the views named from st; client is this strait's build.
func report(st *State, views []string, client straitv1.Build) *Report {
	r := &Report{ClusterSet: st.ClusterSet.Namespace + "/" + st.ClusterSet.Name, Unreadable: unreadable(st)}
	var f []string
	for _, v := range views {
		switch v {
		case viewConnections:
			r.Connections, f = connections(st)
		case viewGateways:
			r.Gateways, f = gateways(st)
		case viewEndpoints:
			r.Endpoints, f = endpoints(st)
		case viewNetworks:
			r.Networks, f = networks(st)
		case viewExports:
			r.Exports, f = exports(st)
		case viewImports:
			r.Imports, f = imports(st)
		case viewVersions:
			r.Versions, f = versions(st, client)
			r.Client = &Version{Cluster: "client", Daemon: "strait", Version: client.Version, Revision: client.Revision}
		}
		r.Findings = append(r.Findings, f...)
	}
	return r
}

// expand turns "all" into every view.
func expand(view string) []string {
	if view == viewAll {
		return viewNames[:len(viewNames)-1]
	}
	return []string{view}
}

func printReport(w io.Writer, r *Report, views []string, format string, now time.Time) error {
	if format == "json" || format == "yaml" {
		return cli.PrintJSONOrYAML(w, r, format)
	}
	for i, v := range views {
		if len(views) > 1 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s\n", strings.ToUpper(v))
		}
		if err := printTable(w, r, v, now); err != nil {
			return err
		}
	}
	return nil
}

// loss is the Peer's health-check loss, "-" when no round was measured (a round with an
// answer has a latency, one without loses 100 %): gateways without a health-check
// address of a family they share (an IPv6-only pair, until the agent checks IPv6) have
// no loss to show, and "0%" would claim one measured.
func loss(latencyMicros int64, lossPercent int32) string {
	if latencyMicros == 0 && lossPercent == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", lossPercent)
}

// printTable prints one view as an aligned table, one row a line, "-" for what is unknown.
func printTable(w io.Writer, r *Report, view string, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")) }
	switch view {
	case viewConnections:
		row("CLUSTER", "PEER", "GATEWAY", "REMOTE GATEWAY", "ENDPOINT", "DRIVER", "STATE", "LATENCY", "LOSS", "LAST HANDSHAKE", "RX", "TX")
		for _, c := range r.Connections {
			row(c.Cluster, c.Peer, orDash(c.Gateway), orDash(c.RemoteGateway), orDash(c.Endpoint), orDash(string(c.Driver)), c.State,
				latency(c.LatencyMicros), loss(c.LatencyMicros, c.LossPercent), age(c.LastHandshake, now), byteCount(c.RxBytes), byteCount(c.TxBytes))
		}
	case viewGateways:
		row("CLUSTER", "NODE", "HA", "ENDPOINT", "DRIVER", "READY", "HEARTBEAT")
		for _, g := range r.Gateways {
			row(g.Cluster, g.Node, string(g.HAState), orDash(g.Endpoint), string(g.Driver), g.Ready, age(g.LastHeartbeat, now))
		}
	case viewEndpoints:
		row("CLUSTER", "ACTIVE GATEWAY", "ENDPOINT", "DRIVER", "HEALTH CHECK IPS", "PUBLIC KEY")
		for _, e := range r.Endpoints {
			hc := strings.Trim(e.HealthCheckIP+","+e.HealthCheckIPv6, ",")
			row(e.Cluster, e.Gateway, orDash(e.Endpoint), string(e.Driver), orDash(hc), orDash(e.PublicKey))
		}
	case viewNetworks:
		row("CLUSTER", "POD CIDRS", "SERVICE CIDRS", "GLOBAL CIDR", "EGRESS IPS")
		for _, n := range r.Networks {
			row(n.Cluster, strings.Join(n.PodCIDRs, ","), strings.Join(n.ServiceCIDRs, ","), orDash(n.GlobalCIDR), orDash(strings.Join(n.EgressIPs, ",")))
		}
	case viewExports:
		row("CLUSTER", "NAMESPACE", "NAME", "VALID", "READY", "CONFLICT", "MESSAGE")
		for _, e := range r.Exports {
			row(e.Cluster, e.Namespace, e.Name, e.Valid, e.Ready, e.Conflict, orDash(e.Message))
		}
	case viewImports:
		row("CLUSTER", "NAMESPACE", "NAME", "TYPE", "FAMILIES", "CLUSTERSET IPS", "EXPORTED BY")
		for _, i := range r.Imports {
			row(i.Cluster, i.Namespace, i.Name, i.Type, orDash(strings.Join(i.IPFamilies, ",")), orDash(strings.Join(i.IPs, ",")), orDash(strings.Join(i.Clusters, ",")))
		}
	case viewVersions:
		row("CLUSTER", "DAEMON", "NODE", "POD", "VERSION", "REVISION", "AGE")
		if c := r.Client; c != nil {
			row(c.Cluster, c.Daemon, "-", "-", c.Version, shortRevision(c.Revision), "-")
		}
		for _, v := range r.Versions {
			row(v.Cluster, v.Daemon, orDash(v.Node), orDash(v.Pod), v.Version, shortRevision(v.Revision), age(v.Since, now))
		}
	}
	return tw.Flush()
}

// printProblems prints the members that could not be read and the findings, one a line.
func printProblems(w io.Writer, r *Report) {
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "error: cluster %s: %s\n", u.Cluster, u.Error)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "warning: %s\n", f)
	}
}
