package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/kernel"
)

// publishGateway writes this node's Gateway: active or passive, endpoint, public key,
// health-check IP, heartbeat. A node that is no longer capable deletes its Gateway.
func (a *Agent) publishGateway(ctx context.Context, m *straitv1.Membership, self *corev1.Node, links []kernel.Link, capable, active bool, d cable.Driver, want Desired) error {
	gw := &straitv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Namespace: a.cfg.Namespace}}
	if !capable || d == nil {
		return client.IgnoreNotFound(a.client.Delete(ctx, gw))
	}
	// active is what the pass read at its start: only while it is still so.
	active = active && a.stillActive()
	state := straitv1.HAPassive
	if active {
		state = straitv1.HAActive
	}
	addrs, addrErr := GatewayAddresses(m, self, links)
	spec := straitv1.GatewaySpec{NodeName: a.cfg.NodeName, HAState: state, LocalIP: addrString(addrs.Local),
		IP: addrString(addrs.Advertised), Port: m.Spec.Cable.Port, PublicKey: d.PublicKey(), Driver: m.Spec.Cable.Driver}
	if hc := want.Local.HealthCheckIP; hc.IsValid() {
		spec.HealthCheckIP = hc.String()
	}
	if hc := want.Local.HealthCheckIPv6; hc.IsValid() {
		spec.HealthCheckIPv6 = hc.String()
	}
	err := a.updateLive(ctx, gw, func() { gw.Spec = spec }, func() error {
		_, err := controllerutil.CreateOrUpdate(ctx, a.client, gw, func() error {
			gw.Spec = spec
			return nil
		})
		return err
	}, func() error { return a.client.Update(ctx, gw) })
	if err != nil {
		return fmt.Errorf("gateway %s: %w", a.cfg.NodeName, err)
	}
	setStatus := func() {
		now := metav1.Now()
		gw.Status.LastHeartbeat = &now
		cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: straitv1.ReasonGatewayActive,
			Message: "this node is the active gateway", ObservedGeneration: gw.Generation}
		if !active {
			cond.Reason, cond.Message = "Standby", "passive: takes over when the active gateway's Lease expires"
		}
		setCondition(&gw.Status.Conditions, cond)
	}
	setStatus()
	statusUpdate := func() error { return a.client.Status().Update(ctx, gw) }
	if err := a.updateLive(ctx, gw, setStatus, statusUpdate, statusUpdate); err != nil {
		return fmt.Errorf("gateway %s status: %w", a.cfg.NodeName, err)
	}
	if active {
		addrErr = errors.Join(addrErr, a.demoteOthers(ctx))
	}
	return addrErr
}

// addrString is a's text, "" for the zero address (not "invalid IP").
func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// demoteOthers marks passive every other Gateway of the cluster that still claims to be
// active while this node holds the Lease: an agent that crashed cannot say so itself,
// and `kubectl get gateways` would show two active gateways until it comes back.
func (a *Agent) demoteOthers(ctx context.Context) error {
	gws := &straitv1.GatewayList{}
	if err := a.client.List(ctx, gws, client.InNamespace(a.cfg.Namespace)); err != nil {
		return fmt.Errorf("listing gateways: %w", err)
	}
	var errs []error
	for i := range gws.Items {
		g := &gws.Items[i]
		if g.Name == a.cfg.NodeName || g.Spec.HAState != straitv1.HAActive {
			continue
		}
		if !a.stillActive() {
			// The term ran out while this pass stalled: g may be the new holder.
			break
		}
		orig := g.DeepCopy()
		g.Spec.HAState = straitv1.HAPassive
		if err := a.client.Patch(ctx, g, client.MergeFrom(orig)); err != nil {
			errs = append(errs, fmt.Errorf("gateway %s: %w", g.Name, err))
			continue
		}
		lost := func() {
			setCondition(&g.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
				Reason: straitv1.ReasonGatewayLeaseLost, ObservedGeneration: g.Generation,
				Message: fmt.Sprintf("%s holds the gateway Lease; this node's agent did not renew it", a.cfg.NodeName)})
		}
		lost()
		update := func() error { return a.client.Status().Update(ctx, g) }
		if err := a.updateLive(ctx, g, lost, update, update); err != nil {
			errs = append(errs, fmt.Errorf("gateway %s status: %w", g.Name, err))
		}
		log.FromContext(ctx).Info("marked a stale active gateway passive", "gateway", g.Name)
	}
	return errors.Join(errs...)
}

// updateLive runs write, a write of obj built on the informers' copy. When that copy
// was behind the API server (a conflict: after an API server outage the informers may
// take up to half a minute to reconnect, and meanwhile every write built on their copy
// of an object this agent writes again and again would be refused), it reads obj from
// the API server itself, applies mutate to it again and runs update once.
func (a *Agent) updateLive(ctx context.Context, obj client.Object, mutate func(), write, update func() error) error {
	err := write()
	if !apierrors.IsConflict(err) {
		return err
	}
	if err := a.live.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return fmt.Errorf("reading %s from the API server after a conflict: %w", obj.GetName(), err)
	}
	mutate()
	return update()
}

// publishShutdown marks this node's Gateway passive after the Lease was released, then
// takes this process's build out of the Membership (a new agent on the node publishes
// its own at its first pass). The Gateway goes first: the other clusters route by it.
func (a *Agent) publishShutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.markPassive(ctx)
	_ = daemonbuild.Withdraw(ctx, a.client, a.cfg.Namespace, a.self)
}

func (a *Agent) markPassive(ctx context.Context) {
	gw := &straitv1.Gateway{}
	if err := a.client.Get(ctx, types.NamespacedName{Namespace: a.cfg.Namespace, Name: a.cfg.NodeName}, gw); err != nil {
		return
	}
	if gw.Spec.HAState == straitv1.HAPassive {
		return
	}
	orig := gw.DeepCopy()
	gw.Spec.HAState = straitv1.HAPassive
	_ = a.client.Patch(ctx, gw, client.MergeFrom(orig))
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	apimeta.SetStatusCondition(conds, c)
}

// healthLoop probes every peer through the tunnel while this node is the active
// gateway and writes the result and the cable's counters into the Peer's status; while
// the cable reports a connection down it also asks for a converge at every round.
func (a *Agent) healthLoop(ctx context.Context) {
	if a.cfg.Prober == nil || a.cfg.HealthInterval <= 0 {
		return
	}
	t := time.NewTicker(a.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.checkPeers(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "peer health")
		}
	}
}

func (a *Agent) checkPeers(ctx context.Context) error {
	a.mu.Lock()
	want, peers, driver := a.last, a.lastPeers, a.driver
	a.mu.Unlock()
	if !want.Active || driver == nil || !a.stillActive() {
		a.metrics.setPeers(nil)
		return nil
	}
	conns := map[string]cable.Connection{}
	if cs, err := driver.Connections(ctx); err == nil {
		for _, c := range cs {
			conns[c.ClusterID] = c
		}
	}
	// A cable that has a remote but no working connection to it is converged again now,
	// not at the next resync: e.g. an IKE initiation the remote gateway refused because
	// its agent had not loaded the connection yet is not retried by charon itself.
	// Converging is idempotent and a live cable's Converge changes nothing.
	for _, c := range conns {
		if !c.Connected {
			a.Trigger()
			break
		}
	}
	var errs []error
	round := make([]peerHealth, 0, len(peers))
	defer func() { a.metrics.setPeers(round) }()
	for _, p := range peers {
		st := straitv1.PeerStatus{Gateway: a.cfg.NodeName, Conditions: p.Status.Conditions}
		c, known := conns[p.Spec.ClusterID]
		health := peerHealth{peer: p.Spec.ClusterID}
		if known {
			health.conn = &c
			st.RxBytes, st.TxBytes = c.RxBytes, c.TxBytes
			if !c.LastHandshake.IsZero() {
				t := metav1.NewTime(c.LastHandshake)
				st.LastHandshake = &t
			}
		}
		reachable := known && c.Connected
		if known && c.Endpoint.IsValid() {
			st.Endpoint = c.Endpoint.String()
		}
		st.NATDetected = known && c.NATDetected
		st.Initiator = initiator(driver.Name(), want.Local, p.Spec.ClusterID, p.Spec.Endpoint)
		reason, msg := straitv1.ReasonUnreachable, "no endpoint"
		bothMasqueraded := st.Initiator == initiatorNone
		if ep := p.Spec.Endpoint; bothMasqueraded {
			reason, msg = straitv1.ReasonBothBehindMasquerade, fmt.Sprintf(
				"this cluster and %s are both behind masquerade only: neither gateway can be dialed, so the cable cannot come up; give one of them an address the other can reach (its spec.clusters[].gateway.endpoint: type Address, ExternalIP, LoadBalancer or DNSName, with the NAT forwarding the cable's UDP port %d)",
				p.Spec.ClusterID, ep.Port)
		} else if ep != nil {
			msg = "the cable reports no connection"
			if checks := a.probeFamilies(ctx, want.Local, ep); len(checks) > 0 {
				reachable, msg = checks.reachable(reachable)
				st.HealthChecks = checks.status()
				health.families = checks
				if first := checks[0]; first.err == nil {
					st.LossPercent, st.LatencyMicros = first.r.LossPercent(), first.r.RTT.Microseconds()
				}
			}
		}
		st.State = straitv1.PeerConnecting
		cond := metav1.Condition{Type: straitv1.ConditionConnected, Status: metav1.ConditionFalse, Reason: reason,
			Message: msg, ObservedGeneration: p.Generation}
		switch {
		case bothMasqueraded:
			// Not even a session opened before the ClusterSet said so (it lives on while
			// both ends keep it) makes the pair work: none can be opened again after a
			// failover or a restart.
			st.State = straitv1.PeerError
			if reachable {
				cond.Message += "; a session opened before still carries traffic, but no new one can be opened"
			}
		case reachable:
			st.State, cond.Status, cond.Reason = straitv1.PeerConnected, metav1.ConditionTrue, straitv1.ReasonConnected
		case p.Spec.Endpoint == nil:
			st.State = straitv1.PeerError
		}
		setCondition(&st.Conditions, cond)
		health.connected = reachable
		round = append(round, health)
		cur := &straitv1.Peer{}
		if err := a.client.Get(ctx, client.ObjectKeyFromObject(&p), cur); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		orig := cur.DeepCopy()
		cur.Status = st
		if err := a.client.Status().Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
			errs = append(errs, fmt.Errorf("peer %s status: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Who opens a cable (PeerStatus.Initiator).
const (
	initiatorLocal  = "Local"
	initiatorRemote = "Remote"
	initiatorBoth   = "Both"
	initiatorNone   = "None"
)

// initiator says which side opens the cable to a peer. A side behind masquerade must,
// and the other then only answers; both behind it, neither can. Otherwise the driver
// decides: IPsec's initiator is the cluster whose ID sorts first (so the two never race
// to duplicate SAs); WireGuard and VXLAN send from both sides.
func initiator(driver straitv1.CableDriver, local cable.Local, remote string, ep *straitv1.PeerEndpoint) string {
	if ep == nil {
		return ""
	}
	switch {
	case local.BehindMasquerade && ep.BehindMasquerade:
		return initiatorNone
	case local.BehindMasquerade:
		return initiatorLocal
	case ep.BehindMasquerade:
		return initiatorRemote
	case driver != straitv1.CableIPsec:
		return initiatorBoth
	case local.ClusterID < remote:
		return initiatorLocal
	}
	return initiatorRemote
}
