package cli

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads a client configuration: the kubeconfig file when one is named, else
// the in-cluster service account, else the usual KUBECONFIG / ~/.kube/config rules.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	default:
		if cfg, err = rest.InClusterConfig(); err != nil {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = userAgent
	Unthrottled(cfg)
	return cfg, nil
}

// Unthrottled turns client-go's client-side rate limit off in a daemon's configuration
// that sets none, as controller-runtime's own config loader does: the API server's
// Priority and Fairness limits a daemon instead. The default, 5 requests a second
// with bursts of 10, held a hub over 255 members to some 100 s a reconcile (a
// kubeconfig read and a ClusterSetMember write per member).
func Unthrottled(cfg *rest.Config) {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
}

// PersonConfig loads a person's kubeconfig for a cluster as kubectl does: the file named
// (flag), else KUBECONFIG, else ~/.kube/config, with the context named or the current
// one. what names the cluster in errors ("the hub"); with no kubeconfig at all, the
// error says which flag gives one instead of client-go's KUBERNETES_MASTER advice.
func PersonConfig(what, kubeconfig, context, flag string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no kubeconfig for %s: give %s FILE, or set KUBECONFIG (the lab's: strait lab kubeconfig CLUSTER > FILE)", what, flag)
	case err != nil:
		return nil, fmt.Errorf("%s's kubeconfig: %w", what, err)
	}
	return cfg, nil
}
