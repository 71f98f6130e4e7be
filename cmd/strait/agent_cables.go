package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/agent"
	"github.com/straitnet/strait/nodeagent/cable"
)

// cableFactory builds the cable drivers of nodeagent/cable/... for the agent. The
// drivers give their routes route.CableProtocol in route.Table.
//
// Wired to nodeagent/cable/drivers when that package is merged: until then every driver
// reports that it is not built in, and gateways stay passive.
func cableFactory(cfg *rest.Config, namespace string) agent.CableFactory {
	_ = cfg
	_ = namespace
	return func(_ context.Context, m *straitv1.Membership, _ string) (cable.Driver, error) {
		return nil, fmt.Errorf("cable driver %q is not built into this binary", m.Spec.Cable.Driver)
	}
}
