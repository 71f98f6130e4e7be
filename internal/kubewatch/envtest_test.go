package kubewatch_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/straitnet/strait/internal/kubewatch"
	"github.com/straitnet/strait/lab/forward"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

var errNotYet = errors.New("not seen yet")

// seen is the latest value of data["v"] an informer's handler saw, and when.
type seen struct {
	mu sync.Mutex
	v  string
	at time.Time
}

func (s *seen) saw(o any) {
	if cm, ok := o.(*corev1.ConfigMap); ok {
		s.mu.Lock()
		s.v, s.at = cm.Data["v"], time.Now()
		s.mu.Unlock()
	}
}

func (s *seen) get() (string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v, s.at
}

// outage is a TCP forwarder in front of an API server that goes away as a crashed or
// partitioned API server does: its listener closes (new connections are refused) and
// every open connection, watches included, is cut.
type outage struct {
	fwd  forward.Forwarder
	stop context.CancelFunc
	done chan error
}

// up starts the forwarder and returns once it accepts connections.
func (o *outage) up(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o.stop, o.done = cancel, make(chan error, 1)
	go func() { o.done <- o.fwd.Run(ctx) }()
	require.Eventually(t, 10*time.Second, "the forwarder listens on "+o.fwd.Listen, func() error {
		c, err := net.Dial("tcp", o.fwd.Listen)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func (o *outage) down(t *testing.T) {
	o.stop()
	if err := <-o.done; err != nil {
		t.Fatalf("forwarder to the API server: %v", err)
	}
}

// TestInformerFollowsAnAPIServerThatCameBack: a real kube-apiserver is cut off for 12 s
// (refused, its watches cut) and comes back; a change made right after it answers
// reaches an informer built with NewSharedIndexInformer within seconds. client-go's own
// informer, run beside it, waits out its reflector's back-off (logged, for comparison).
func TestInformerFollowsAnAPIServerThatCameBack(t *testing.T) {
	c := clusters.NewCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	cut := &outage{fwd: forward.Forwarder{Listen: front, Target: server.Host}}
	cut.up(t)
	t.Cleanup(func() { cut.down(t) })
	through := rest.CopyConfig(c.Config)
	through.Host = "https://" + front
	kube := kubernetes.NewForConfigOrDie(through)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubewatch"}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps(ns.Name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"v": "before"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "configmaps", ns.Name, fields.Everything())
	ours, stock := &seen{}, &seen{}
	for _, run := range []struct {
		informer cache.SharedIndexInformer
		seen     *seen
	}{
		{kubewatch.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}), ours},
		{cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}), stock},
	} {
		s := run.seen
		if _, err := run.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: s.saw, UpdateFunc: func(_, o any) { s.saw(o) },
		}); err != nil {
			t.Fatal(err)
		}
		go run.informer.RunWithContext(ctx)
		if !cache.WaitForCacheSync(ctx.Done(), run.informer.HasSynced) {
			t.Fatal("informer did not sync")
		}
	}

	cut.down(t)
	time.Sleep(12 * time.Second)
	cut.up(t)
	var changed time.Time
	require.Eventually(t, 30*time.Second, "the change after the restart is written", func() error {
		got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Data["v"] = "after"
		_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
		changed = time.Now()
		return err
	})
	within, err := require.Within(5*time.Second, func() error {
		if v, _ := ours.get(); v != "after" {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the change made after the API server came back did not reach the informer within 5 s: %v", err)
	}
	t.Logf("informer with kubewatch: saw the change %s after it was made", within.Round(time.Millisecond))
	if _, err := require.Within(25*time.Second, func() error {
		if v, _ := stock.get(); v != "after" {
			return errNotYet
		}
		return nil
	}); err == nil {
		_, at := stock.get()
		t.Logf("client-go's informer: saw it %s after it was made", at.Sub(changed).Round(time.Millisecond))
	} else {
		t.Logf("client-go's informer: had not seen it 25 s after it was made")
	}
}
