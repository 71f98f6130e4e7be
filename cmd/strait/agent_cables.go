package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/agent"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/drivers"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/route"
)

// cableFactory builds the cable drivers of nodeagent/cable/... for the agent. The
// drivers put their routes in route.Table with route.CableProtocol. The wireguard driver
// keeps the cluster's key in a Secret in namespace (with cfg; without it, as for
// --cleanup away from the API, it can only clean up); the ipsec driver talks to the
// `strait charon` sidecar through its VICI socket in ipsec.DefaultCharonDir.
func cableFactory(cfg *rest.Config, namespace string) agent.CableFactory {
	return func(ctx context.Context, m *straitv1.Membership, _ string) (cable.Driver, error) {
		o := drivers.Options{
			Routing:    cable.Routing{Table: route.Table, Protocol: route.CableProtocol},
			Namespace:  namespace,
			VICISocket: ipsec.Charon{Dir: ipsec.DefaultCharonDir}.VICISocket(),
		}
		if cfg != nil {
			c, err := client.New(cfg, client.Options{})
			if err != nil {
				return nil, fmt.Errorf("client of the member cluster: %w", err)
			}
			o.Client = c
		}
		return drivers.New(ctx, m.Spec.Cable.Driver, o)
	}
}
