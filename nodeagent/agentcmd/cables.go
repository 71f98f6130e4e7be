package agentcmd

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/agent"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/drivers"
	"github.com/straitnet/strait/nodeagent/route"
)

// cableFactory builds the cable drivers of nodeagent/cable/... for the agent: their routes
// go into Strait's table with the cable route protocol (the route agent prunes only its
// own protocol, so neither removes the other's routes). cfg may be nil (--cleanup without
// an API server): drivers that need the cluster then refuse to build. namespace holds
// Strait's objects in the member (the wireguard key Secret). nl is the handle
// of the namespace to program; nil for the agent's own. A driver's background messages go
// to log (its routine ones at V(2)).
func cableFactory(cfg *rest.Config, namespace, viciSocket string, nl *netlink.Handle, log logr.Logger) agent.CableFactory {
	return func(ctx context.Context, m *straitv1.Membership, _ string) (cable.Driver, error) {
		var c client.Client
		if cfg != nil {
			var err error
			if c, err = client.New(cfg, client.Options{Scheme: agent.Scheme()}); err != nil {
				return nil, fmt.Errorf("client for the cable driver: %w", err)
			}
		}
		o := cableOptions(namespace, viciSocket, nl, log)
		o.Client = c
		return drivers.New(ctx, m.Spec.Cable.Driver, o)
	}
}

// cableOptions are the drivers' options on this node, without a client.
func cableOptions(namespace, viciSocket string, nl *netlink.Handle, log logr.Logger) drivers.Options {
	return drivers.Options{
		Routing:    cable.Routing{Table: route.Table, Protocol: route.CableProtocol},
		Namespace:  namespace,
		VICISocket: viciSocket,
		Netlink:    nl,
		Logf:       func(f string, a ...any) { log.Info(fmt.Sprintf(f, a...)) },
		Debugf: func(f string, a ...any) {
			if v := log.V(2); v.Enabled() {
				v.Info(fmt.Sprintf(f, a...))
			}
		},
	}
}
