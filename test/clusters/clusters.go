package clusters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/k8sversion"
	"github.com/straitnet/strait/internal/scheme"
)

// KubeConfigKey is the key of the kubeconfig in a member's Secret in the hub (Flux's
// default for meta.KubeConfigReference).
const KubeConfigKey = "value"

// Options say what to start.
type Options struct {
	// Members are the member cluster names, each an RFC 1123 label.
	Members []string
	// HubNamespace is where the kubeconfig Secrets go; default strait-system.
	HubNamespace string
	// MemberUser is the identity written into each member's kubeconfig. Default: a user
	// "strait-hub" in group system:masters.
	MemberUser *envtest.User
}

// Cluster is one running control plane.
type Cluster struct {
	Name string
	// Config is an administrator's connection.
	Config *rest.Config
	// Client is an administrator's client with Strait's, the MCS and the core types.
	Client client.Client
	// KubeConfigSecret is the Secret in the hub holding the member's kubeconfig (empty
	// for the hub).
	KubeConfigSecret string
	// KubeConfig is that kubeconfig; for the hub, an administrator's.
	KubeConfig []byte

	env     *envtest.Environment
	certDir string
	mu      sync.Mutex
	stopped bool
}

// Env is a running hub and its members.
type Env struct {
	Hub          *Cluster
	Members      []*Cluster
	HubNamespace string
	Scheme       *runtime.Scheme
}

// NewScheme has the types the hub, the members and the tests use.
func NewScheme() *runtime.Scheme { return scheme.New() }

// Start starts the hub and the members in parallel, installs the CRDs and registers
// each member's kubeconfig in the hub. On error everything started is stopped.
func Start(ctx context.Context, opts Options) (_ *Env, retErr error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if lacks := Lacks(root); lacks != "" {
		return nil, errors.New(lacks)
	}
	if opts.HubNamespace == "" {
		opts.HubNamespace = straitv1.SystemNamespace
	}
	e := &Env{HubNamespace: opts.HubNamespace, Scheme: NewScheme()}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, e.Stop())
		}
	}()
	all := []*Cluster{{Name: "hub"}}
	for _, m := range opts.Members {
		all = append(all, &Cluster{Name: m})
	}
	e.Hub, e.Members = all[0], all[1:]
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	// A few at a time: on two cores, many API servers starting at once all miss their
	// start timeout.
	sem := make(chan struct{}, 3)
	for i, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// The hub gets the MCS CRDs too: it is often a member of its own ClusterSet.
			if errs[i] = c.start(root, e.Scheme); errs[i] == nil {
				errs[i] = ensureNamespace(ctx, c.Client, straitv1.SystemNamespace)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return e, err
	}
	if err := ensureNamespace(ctx, e.Hub.Client, e.HubNamespace); err != nil {
		return e, err
	}
	admin, err := e.Hub.env.AddUser(envtest.User{Name: "hub-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return e, fmt.Errorf("hub kubeconfig: %w", err)
	}
	if e.Hub.KubeConfig, err = admin.KubeConfig(); err != nil {
		return e, fmt.Errorf("hub kubeconfig: %w", err)
	}
	user := envtest.User{Name: "strait-hub", Groups: []string{"system:masters"}}
	if opts.MemberUser != nil {
		user = *opts.MemberUser
	}
	for _, m := range e.Members {
		if err := e.register(ctx, m, user); err != nil {
			return e, err
		}
	}
	return e, nil
}

// start starts c's control plane with Strait's and the MCS CRDs.
func (c *Cluster) start(root string, scheme *runtime.Scheme) error {
	dir, err := os.MkdirTemp("", "strait-"+c.Name+"-")
	if err != nil {
		return err
	}
	c.certDir = dir
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: Assets(root),
		CRDDirectoryPaths: []string{
			filepath.Join(root, "kustomize", "crd", "bases"),
			filepath.Join(root, "kustomize", "crd", "mcs"),
		},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// Our own certificate directory survives StopAPIServer, so that a restarted API
	// server keeps its port, its serving certificate and its client CA, and the
	// kubeconfig in the hub stays valid, as with a real member coming back.
	c.env.ControlPlane.GetAPIServer().CertDir = dir
	// Kubelets are reached by their InternalIP, as the lab's are: a node's name
	// resolves nowhere here.
	c.env.ControlPlane.GetAPIServer().Configure().Set("kubelet-preferred-address-types", "InternalIP")
	// Tests give exported Services fixed cluster IPs in 10.0.0.0/24, and the hub's
	// derived Services get theirs allocated. In a /16 the API server allocates from above
	// the first 256 addresses (the band it keeps for fixed IPs) while there is room, so an
	// allocation never takes an address a test is about to ask for.
	c.env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := c.env.Start()
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.Name, err)
	}
	c.Config = cfg
	c.Client, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for %s: %w", c.Name, err)
	}
	return nil
}

func (e *Env) register(ctx context.Context, m *Cluster, user envtest.User) error {
	u, err := m.env.AddUser(user, nil)
	if err != nil {
		return fmt.Errorf("user for %s: %w", m.Name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", m.Name, err)
	}
	m.KubeConfig = kc
	m.KubeConfigSecret = m.Name + "-kubeconfig"
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.KubeConfigSecret, Namespace: e.HubNamespace},
		Data:       map[string][]byte{KubeConfigKey: kc},
	}
	if err := e.Hub.Client.Create(ctx, sec); err != nil {
		return fmt.Errorf("kubeconfig secret for %s: %w", m.Name, err)
	}
	return nil
}

// Member returns the member called name, or nil.
func (e *Env) Member(name string) *Cluster {
	for _, m := range e.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Stop stops every control plane and removes their directories.
func (e *Env) Stop() error {
	var errs []error
	for _, c := range append([]*Cluster{e.Hub}, e.Members...) {
		if c != nil {
			errs = append(errs, c.Stop())
		}
	}
	return errors.Join(errs...)
}

// Stop stops the cluster's control plane and removes its directory.
func (c *Cluster) Stop() error {
	if c.env == nil {
		return nil
	}
	var errs []error
	if err := c.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping %s: %w", c.Name, err))
	}
	if c.certDir != "" {
		errs = append(errs, os.RemoveAll(c.certDir))
	}
	return errors.Join(errs...)
}

// StopAPIServer stops the cluster's kube-apiserver and leaves its etcd running: the
// cluster becomes unreachable with its data intact.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	return c.env.ControlPlane.APIServer.Stop()
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the same address
// and with the same certificates.
func (c *Cluster) StartAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		return nil
	}
	if err := c.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("restarting %s: %w", c.Name, err)
	}
	c.stopped = false
	return nil
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

// Assets is the directory of the Kubernetes test binaries: $KUBEBUILDER_ASSETS, else
// bin/k8s/<k8sversion.Version> under the repository's root.
func Assets(root string) string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(root, "bin", "k8s", k8sversion.Version)
}

// Lacks says which control-plane binary Assets(root) lacks, or "".
func Lacks(root string) string {
	assets := Assets(root)
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return fmt.Sprintf("no %s in %s (run make k8s-binaries)", b, assets)
		}
	}
	return ""
}

// RepoRoot finds the repository root: the nearest directory up from the working
// directory whose go.mod declares this module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && len(data) > 0 && containsModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

func containsModule(gomod []byte) bool {
	const want = "module github.com/straitnet/strait\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}

// StandInKubeConfigSecret is the kubeconfig Secret, in the hub's namespace ns, of a
// member that an in-memory stand-in answers for (controllers.StandIns): it names a
// server nobody answers at, <name>.standin.invalid.
func StandInKubeConfigSecret(ns, name string) (*corev1.Secret, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".standin.invalid:6443"}
	kc.AuthInfos["strait-hub"] = &clientcmdapi.AuthInfo{Token: "standin"}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "strait-hub"}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of stand-in %s: %w", name, err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ns},
		Data: map[string][]byte{KubeConfigKey: data}}, nil
}
