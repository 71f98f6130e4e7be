package agent

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// TestAWriteOnAStaleCopyIsRetriedOnALiveOne: after an API server outage the informers'
// copy of this node's Gateway lags behind the API server; a write built on it is refused
// as a conflict and must be made again on the object read from the API server, or the
// node cannot publish that it became the active gateway until the informers reconnect.
func TestAWriteOnAStaleCopyIsRetriedOnALiveOne(t *testing.T) {
	ctx := context.Background()
	gw := &straitv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "c2-gw-2"},
		Spec: straitv1.GatewaySpec{NodeName: "c2-gw-2", HAState: straitv1.HAPassive}}
	server := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(gw).WithStatusSubresource(gw).Build()
	stale := &straitv1.Gateway{}
	if err := server.Get(ctx, client.ObjectKeyFromObject(gw), stale); err != nil {
		t.Fatal(err)
	}
	// A write the informers have not seen: the node's own heartbeat just before the outage.
	now := metav1.Now()
	newer := stale.DeepCopy()
	newer.Status.LastHeartbeat = &now
	if err := server.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}

	a := &Agent{client: server, live: server}
	obj := stale.DeepCopy()
	activate := func() { obj.Spec.HAState = straitv1.HAActive }
	activate()
	update := func() error { return a.client.Update(ctx, obj) }
	if err := a.updateLive(ctx, obj, activate, update, update); err != nil {
		t.Fatalf("the write on the live copy: %v", err)
	}
	got := &straitv1.Gateway{}
	if err := server.Get(ctx, client.ObjectKeyFromObject(gw), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.HAState != straitv1.HAActive || got.Status.LastHeartbeat == nil {
		t.Errorf("gateway after the write: %s, heartbeat %v; want active with the newer heartbeat kept", got.Spec.HAState, got.Status.LastHeartbeat)
	}

	// Without the live read the same write is refused.
	obj = stale.DeepCopy()
	activate()
	if err := update(); err == nil {
		t.Error("an update on the stale copy was not refused: the test does not make a stale copy")
	}
}
