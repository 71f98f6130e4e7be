package cli

import (
	"sort"

	"k8s.io/client-go/tools/clientcmd"
)

// Contexts are the context names of a kubeconfig (KUBECONFIG's, else ~/.kube/config's,
// when none is named), sorted; nil with the error when it cannot be loaded.
func Contexts(kubeconfig string) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range raw.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
