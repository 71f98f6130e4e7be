package clusters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// UninstallCRD removes from c the CRD that file (its name under kustomize/crd, e.g.
// strait.io_gateways.yaml) installed, as in a member where Strait or the MCS API is
// not installed, or an older release lacks the kind, and waits until c no longer
// serves the kind.
func (c *Cluster) UninstallCRD(file string) error {
	opts, err := c.crdOptions(file)
	if err != nil {
		return err
	}
	if err := envtest.UninstallCRDs(c.Config, opts); err != nil {
		return fmt.Errorf("uninstalling %s: %w", file, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	gone := func(context.Context) (bool, error) {
		for _, crd := range opts.CRDs {
			for _, v := range crd.Spec.Versions {
				list, err := disco.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return false, nil //nolint:nilerr // asked again until the time is up
				}
				if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }) {
					return false, nil
				}
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, gone); err != nil {
		return fmt.Errorf("%s still served: %w", file, err)
	}
	return nil
}

// InstallCRD installs the CRD of file (as UninstallCRD names it) in c again and waits
// until c serves its kind.
func (c *Cluster) InstallCRD(file string) error {
	opts, err := c.crdOptions(file)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(c.Config, opts); err != nil {
		return fmt.Errorf("installing %s: %w", file, err)
	}
	return nil
}

// crdOptions finds file among the CRDs c was started with.
func (c *Cluster) crdOptions(file string) (envtest.CRDInstallOptions, error) {
	for _, dir := range c.env.CRDDirectoryPaths {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); err == nil {
			opts := envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}
			return opts, envtest.ReadCRDFiles(&opts)
		}
	}
	return envtest.CRDInstallOptions{}, fmt.Errorf("no CRD file %s in %v", file, c.env.CRDDirectoryPaths)
}
