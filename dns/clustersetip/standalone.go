package clustersetip

import (
	"context"
	"errors"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/straitnet/strait/dns/source"
)

// RunWithSource runs a Writer fed by a source (dns/source) of its own until ctx is
// done: the writer as strait dns runs it, without the DNS server that shares the
// source's snapshots there.
func RunWithSource(ctx context.Context, cfg *rest.Config, log *slog.Logger) error {
	w, err := New(cfg, log)
	if err != nil {
		return err
	}
	src, err := source.New(cfg, source.Options{OnError: func(err error) { log.Error("taking in an object", "err", err) }}, w.Observe)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- src.Run(ctx) }()
	go func() { errc <- w.Run(ctx) }()
	first := <-errc
	cancel()
	return errors.Join(first, <-errc)
}
