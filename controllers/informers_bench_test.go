package controllers

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
	"github.com/straitnet/strait/test/clusters"
)

// BenchmarkMemberInformers is what one member connection of a real hub holds in memory:
// a real API server holding every object the hub writes into a member of a
// 1,000-member ClusterSet (its Peers, Membership, GlobalIngresses, and per export a
// ServiceImport with its status, an MCS EndpointSlice, a derived Service and its
// slice, as plan.Objects builds them), and the hub's own connection to it
// (members.Cache, its informers on watchedKinds with managed fields dropped, and the
// prints its events keep): of the hub's objects, it watches the Membership and the
// GlobalIngresses, not the per-import kinds nor the Peers, which the member reports. informer-heap-MiB is the live heap the connection holds once
// its informers have synced; B/object that over the objects; ns/op the time from
// connecting to synced, a member's share of a new hub's cold start, which
// BenchmarkHubScale's stand-ins do not list. BenchmarkHubScale's hub-live-heap-MiB
// counts none of this. $STRAIT_INFORMER_EXPORTS sets the exports (default 2,000;
// the hub-scale issue's size is 10,000).
func BenchmarkMemberInformers(b *testing.B) {
	exports := 2000
	if v := os.Getenv("STRAIT_INFORMER_EXPORTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > bigset.Exports {
			b.Fatalf("STRAIT_INFORMER_EXPORTS=%q: want a number of exports from 1 to %d", v, bigset.Exports)
		}
		exports = n
	}
	ctx := context.Background()
	cs, obs := bigset.New(bigset.MaxClusters, exports)
	p, errs := plan.Compute(cs, obs)
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	member := bigset.Name(1)
	objs := p.Objects(member)
	m := clusters.NewCluster(b)
	seedMember(ctx, b, m.Client, objs)

	ingresses := 0
	for _, o := range objs {
		if _, ok := o.(*straitv1.GlobalIngress); ok {
			ingresses++
		}
	}
	cache := hubCache(b, m)
	key := members.Key{ClusterSet: types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}, Cluster: member}
	var held uint64
	idle := runtime.NumGoroutine()
	settle(idle)
	for b.Loop() {
		before := heapLive()
		conn := connectSynced(b, cache, key, m)
		b.StopTimer()
		if n, _ := conn.Print("GlobalIngress"); n.N != ingresses {
			b.Fatalf("the connection's informers hold %d GlobalIngresses, want %d", n.N, ingresses)
		}
		runtime.GC()
		held = heapLive() - before
		cache.Forget(key)
		settle(idle)
		b.StartTimer()
	}
	b.ReportMetric(float64(held)/(1<<20), "informer-heap-MiB")
	b.ReportMetric(float64(len(objs)), "objects")
	b.ReportMetric(float64(held)/float64(len(objs)), "B/object")
}

// settle waits until the goroutines of the connection the last iteration dropped have
// ended (down to idle, or no fewer for a second: a connection with a transport of its
// own leaves its idle HTTP/2 connection), then collects the garbage twice. A watch
// stream's gzip reader (some 40 KB) goes back to the HTTP/2 transport's sync.Pool only
// when its goroutine ends, and a pooled object outlives one collection: counted live
// before the next connection, which takes it back, it made that connection's figure
// some 250 KB low in one run and not in the next.
func settle(idle int) {
	last, since := runtime.NumGoroutine(), time.Now()
	for n := last; n > idle && time.Since(since) < time.Second; n = runtime.NumGoroutine() {
		if n != last {
			last, since = n, time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.GC()
}

// hubCache is a cache of member connections as straitd's hub builds it
// (NewClusterSetReconciler): informers on watchedKinds, managed fields dropped, prints
// kept. It is stopped when b ends.
func hubCache(b *testing.B, m *clusters.Cluster) *members.Cache {
	cache := members.NewCache(members.Options{Scheme: m.Client.Scheme(), Watched: watchedKinds(),
		Prints: memberPrints, FieldManager: straitv1.FieldManager, Mapper: memberMapper()})
	b.Cleanup(cache.Stop)
	return cache
}

// connectSynced connects key to the member m through cache and waits until the
// connection's informers have synced.
func connectSynced(b *testing.B, cache *members.Cache, key members.Key, m *clusters.Cluster) *members.Member {
	b.Helper()
	conn, err := cache.Connect(key, "1", func() (*rest.Config, error) { return m.Config, nil })
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); !conn.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the member's informers did not sync in 5 minutes")
		}
	}
	return conn
}

// seedMember creates objs in a member as the hub's field manager, with their status
// where they have one, sixteen at a time.
func seedMember(ctx context.Context, b *testing.B, c client.Client, objs []client.Object) {
	b.Helper()
	namespaces := map[string]bool{straitv1.SystemNamespace: true}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			namespaces[o.GetNamespace()] = true
		}
	}
	for ns := range namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		if _, ok := o.(*corev1.Secret); ok {
			continue // the IPsec key: not watched
		}
		g.Go(func() error {
			var st *mcsv1.ServiceImportStatus
			if si, ok := o.(*mcsv1.ServiceImport); ok {
				for i := range si.Status.Conditions {
					if si.Status.Conditions[i].LastTransitionTime.IsZero() {
						si.Status.Conditions[i].LastTransitionTime = metav1.Now() // as the hub's apply sets it
					}
				}
				st = si.Status.DeepCopy()
			}
			if err := c.Create(gctx, o, client.FieldOwner(straitv1.FieldManager)); err != nil {
				return fmt.Errorf("%T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
			}
			if st != nil {
				si := o.(*mcsv1.ServiceImport)
				si.Status = *st
				return c.Status().Update(gctx, si, client.FieldOwner(straitv1.FieldManager))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}
