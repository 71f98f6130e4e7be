package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/lab/topology"
)

// early is a real node made ready while the control planes come up: its containerd
// runs with the images imported, its kubelet waits for the API server.
type early struct {
	done chan struct{}
	node *node.Node
	err  error
}

// prepareNodes starts, for every real node of t that has no state yet, the part of its
// start that needs no API server (lab/node.Prepare: containerd and the images, most of
// a node's start), all at once, and returns; ensureRealNode then starts each one's
// kubelet. A node with state already (up again, or after a crash) is left to
// ensureRealNode as before. wait returns once every preparation has ended.
func (l *Lab) prepareNodes(ctx context.Context, t *topology.Lab, withSamples bool) (wait func(), err error) {
	var rns []realNode
	for _, c := range t.Clusters {
		rns = append(rns, l.memberRealNodes(c, withSamples)...)
	}
	if t.HubNode != nil {
		rn, err := l.hubRealNode(t)
		if err != nil {
			return func() {}, err
		}
		rns = append(rns, rn)
	}
	if err := os.MkdirAll(l.state.nodesDir(), 0o755); err != nil {
		return func() {}, err
	}
	var all []*early
	// The first node of each image set without a seed imports the set and saves its
	// seed; the others of the set wait for it and link the seed (lab/node's seeds).
	makers := map[string]*early{}
	for _, rn := range rns {
		if _, err := os.Stat(filepath.Join(l.state.nodeDir(rn.node.Name), "node.json")); err == nil {
			continue
		}
		cfg, err := l.nodeConfig(rn, nil)
		if err != nil {
			return func() {}, err
		}
		seed, err := node.SeedPath(cfg)
		if err != nil {
			return func() {}, err
		}
		e := &early{done: make(chan struct{})}
		l.mu.Lock()
		if l.early == nil {
			l.early = map[string]*early{}
		}
		l.early[rn.node.Name] = e
		l.mu.Unlock()
		all = append(all, e)
		var after *early
		if seed != "" && !node.SeedSaved(seed) {
			if after = makers[seed]; after == nil {
				makers[seed] = e
			}
		}
		go func() {
			defer close(e.done)
			if after != nil {
				select {
				case <-after.done:
				case <-ctx.Done():
					e.err = ctx.Err()
					return
				}
			}
			e.node, e.err = node.Prepare(ctx, cfg)
		}()
	}
	if len(all) > 0 {
		how := "from their image sets' seeds"
		if len(makers) > 0 {
			how = fmt.Sprintf("%d importing their image set first, then the others from its seed", len(makers))
		}
		l.progress("nodes: %d preparing (containerd, images: %s) while the control planes start", len(all), how)
	}
	return func() {
		for _, e := range all {
			<-e.done
		}
	}, nil
}

// takeEarly hands over the node prepared for name, if any, once.
func (l *Lab) takeEarly(name string) *early {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.early[name]
	delete(l.early, name)
	return e
}

// startEarly starts the kubelet of a prepared node once its preparation is done.
func (l *Lab) startEarly(ctx context.Context, rn realNode, e *early) error {
	select {
	case <-e.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if e.err != nil {
		return e.err
	}
	kc, err := os.ReadFile(rn.kubeconfig)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := e.node.StartKubelet(ctx, kc); err != nil {
		return err
	}
	if err := l.recordNode(rn.cluster, rn.node.Name, e.node); err != nil {
		return err
	}
	tm := e.node.Timings()
	l.progress("%s: real node up %.1fs after its API server (containerd %.1fs and images %.1fs by %s while the control planes came up; kubelet %.1fs)",
		rn.node.Name, time.Since(start).Seconds(), tm.Containerd.Seconds(), tm.Images.Seconds(), tm.ImagesFrom, tm.Kubelet.Seconds())
	return nil
}
