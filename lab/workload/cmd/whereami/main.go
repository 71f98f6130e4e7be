package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/straitnet/strait/lab/workload"
)

func main() {
	var id workload.Identity
	listen := flag.String("listen", ":"+strconv.Itoa(workload.WhereamiPort), "address to serve on")
	flag.StringVar(&id.Cluster, "cluster", os.Getenv("CLUSTER_NAME"), "cluster name (env CLUSTER_NAME)")
	flag.StringVar(&id.Node, "node", os.Getenv("NODE_NAME"), "node name (env NODE_NAME)")
	flag.StringVar(&id.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "pod namespace (env POD_NAMESPACE)")
	flag.StringVar(&id.Pod, "pod", os.Getenv("POD_NAME"), "pod name (env POD_NAME)")
	flag.StringVar(&id.PodIP, "pod-ip", os.Getenv("POD_IP"), "pod IP (env POD_IP)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := workload.ServeWhereami(ctx, *listen, id, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "whereami:", err)
		os.Exit(1)
	}
}
