package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/lab/monitoring/crds"
	"github.com/straitnet/strait/lab/topology"
)

// The Prometheus of every cluster of a lab with monitoring: what a platform team runs
// beside its clusters, here in the cluster's control-plane namespace (where CoreDNS
// runs too), which reaches the nodes on the LAN and the pods through the nodes, as a
// Prometheus pod would. Each discovers Strait's pods with a ServiceAccount token of its
// own cluster (namespace monitoring, allowed to read pods in strait-system, as
// docs/install.md tells users).
const (
	prometheusNamespace = "monitoring"
	prometheusAccount   = "prometheus"
	prometheusToken     = "prometheus-token"
	// PrometheusInterval is the lab's scrape and evaluation interval.
	PrometheusInterval = time.Second
)

// PrometheusAddr is where a cluster's Prometheus answers inside the lab: the member's
// control-plane LAN address (the hub's federates from there), or the hub's loopback.
func PrometheusAddr(t *topology.Lab, cluster string) (ns string, addr netip.AddrPort, err error) {
	if cluster == topology.HubName && t.Hub != nil {
		return t.Hub.Namespace, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), monitoring.Port), nil
	}
	c, ok := t.Cluster(cluster)
	if !ok {
		return "", netip.AddrPort{}, fmt.Errorf("no cluster %q in the lab", cluster)
	}
	return c.ControlPlane.Namespace, netip.AddrPortFrom(c.ControlPlane.LANAddr.Addr(), monitoring.Port), nil
}

// PrometheusAPI is a client of a cluster's Prometheus, dialled inside the lab.
func PrometheusAPI(t *topology.Lab, cluster string) (promv1.API, error) {
	ns, addr, err := PrometheusAddr(t, cluster)
	if err != nil {
		return nil, err
	}
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + addr.String(), RoundTripper: inNamespace(ns)})
	if err != nil {
		return nil, err
	}
	return promv1.NewAPI(c), nil
}

// inNamespace is an HTTP transport that dials inside network namespace ns, a connection
// a request.
func inNamespace(ns string) *http.Transport {
	return &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return netns.Dial(ctx, ns, network, addr)
		}}
}

// prometheusDir keeps a cluster's Prometheus configuration, rules, kubeconfig and data.
func (s State) prometheusDir(cluster string) string { return s.path(cluster, "prometheus") }

// PrometheusHostPort is the host's loopback port of the hub's Prometheus (the lab
// daemon's forwarder), below the git server's.
func (r *Record) PrometheusHostPort() int { return r.PortBase - 2 }

// ensurePrometheus gives a cluster its Prometheus: the ServiceAccount and its token, the
// configuration of kustomize/components/monitoring/prometheus with the lab's values,
// the component's rules shortened by monitoring.LabScale, and the process.
// The hub's federates from the servers in federate.
func (l *Lab) ensurePrometheus(ctx context.Context, cp topology.ControlPlane, federate []netip.AddrPort, client kubernetes.Interface, timeout time.Duration) error {
	role := "member"
	if cp.Cluster == topology.HubName {
		role = "hub"
	}
	if err := ensurePrometheusAccount(ctx, client); err != nil {
		return fmt.Errorf("%s: prometheus's ServiceAccount: %w", cp.Cluster, err)
	}
	token, err := waitToken(ctx, client, prometheusNamespace, prometheusToken, timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", cp.Cluster, err)
	}
	dir := l.state.prometheusDir(cp.Cluster)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeTokenKubeconfig(l.state.InNamespaceKubeconfig(cp.Cluster), kubeconfig, prometheusAccount, token); err != nil {
		return fmt.Errorf("%s: prometheus's kubeconfig: %w", cp.Cluster, err)
	}
	component := filepath.Join(l.opts.Kustomize, "components", "monitoring")
	rules, err := os.ReadFile(filepath.Join(component, "rules", role+".rules.yaml"))
	if err != nil {
		return err
	}
	if rules, err = monitoring.ShortenRules(rules, monitoring.LabScale); err != nil {
		return err
	}
	ruleFile := filepath.Join(dir, role+".rules.yaml")
	changed, err := writeIfChanged(ruleFile, rules)
	if err != nil {
		return err
	}
	base, err := os.ReadFile(filepath.Join(component, "prometheus", role+".yaml"))
	if err != nil {
		return err
	}
	cfg, err := monitoring.Config(base, monitoring.Values{Cluster: cp.Cluster, Kubeconfig: kubeconfig, RuleFile: ruleFile,
		Interval: PrometheusInterval, Federate: federate})
	if err != nil {
		return fmt.Errorf("%s: %w", cp.Cluster, err)
	}
	config := filepath.Join(dir, "prometheus.yaml")
	cfgChanged, err := writeIfChanged(config, cfg)
	if err != nil {
		return err
	}
	// A running server reads a changed configuration or rule file when asked, as it
	// would from a config reloader beside it.
	if _, ok := l.state.Pid(cp.Cluster, "prometheus"); ok && (changed || cfgChanged) {
		if err := reloadPrometheus(ctx, cp.Namespace); err != nil {
			return fmt.Errorf("%s: reloading prometheus: %w", cp.Cluster, err)
		}
	}
	return l.ensureProcess(cp.Cluster, "prometheus", cp.Namespace, l.opts.Prometheus,
		"--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=:%d", monitoring.Port), "--storage.tsdb.retention.time=6h",
		// Target changes reach the scrapes every second, not every 5 s, as the lab's
		// intervals are shorter (monitoring.LabScale).
		"--scrape.discovery-reload-interval=1s",
		// The SLO histograms' exemplars name the event each observation was.
		"--enable-feature=exemplar-storage",
		"--web.enable-lifecycle", "--log.level=warn")
}

// reloadPrometheus asks the Prometheus in ns to read its configuration and rules again
// and returns once it has, or with its error.
func reloadPrometheus(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: inNamespace(ns)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/-/reload", monitoring.Port), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// ensurePrometheusAccount makes namespace monitoring, the ServiceAccount prometheus with
// a long-lived token Secret, and its Role to read pods in strait-system.
func ensurePrometheusAccount(ctx context.Context, c kubernetes.Interface) error {
	objs := []func() error{
		func() error {
			_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prometheusNamespace}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ServiceAccounts(prometheusNamespace).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: prometheusAccount}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().Secrets(prometheusNamespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: prometheusToken, Annotations: map[string]string{corev1.ServiceAccountNameKey: prometheusAccount}},
				Type:       corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().Roles(straitv1.SystemNamespace).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: prometheusAccount},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.RbacV1().RoleBindings(straitv1.SystemNamespace).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: prometheusAccount},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: prometheusAccount},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: prometheusAccount, Namespace: prometheusNamespace}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// waitToken waits until the token controller has filled a ServiceAccount token Secret.
func waitToken(ctx context.Context, client kubernetes.Interface, ns, name string, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
			return s.Data[corev1.ServiceAccountTokenKey], nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the token controller has not filled it")
			}
			return nil, fmt.Errorf("no token in Secret %s/%s after %s: %w", ns, name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// writeTokenKubeconfig writes to path the cluster (server and CA) of the kubeconfig at
// from, with a token as the user.
func writeTokenKubeconfig(from, path, user string, token []byte) error {
	src, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return err
	}
	kc, err := tokenKubeconfig(src, user, user, "", token)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	return clientcmd.WriteToFile(*kc, path)
}

// tokenKubeconfig is the first cluster of src with user's token, in the current context
// named context (namespace ns, when given).
func tokenKubeconfig(src *clientcmdapi.Config, context, user, ns string, token []byte) (*clientcmdapi.Config, error) {
	names := make([]string, 0, len(src.Clusters))
	for name := range src.Clusters {
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, errors.New("no cluster in the kubeconfig")
	}
	slices.Sort(names)
	kc := clientcmdapi.NewConfig()
	kc.Clusters[names[0]] = src.Clusters[names[0]]
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: string(token)}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: names[0], AuthInfo: user, Namespace: ns}
	kc.CurrentContext = context
	return kc, nil
}

// upMonitoring starts every joined cluster's Prometheus and the hub's, and waits until
// each scrapes every target the lab has: each node's agent and strait dns's replicas in
// a member, strait hub's replicas and every member's Prometheus in the hub.
func (l *Lab) upMonitoring(ctx context.Context, t *topology.Lab, rec *Record, o UpOptions) error {
	start := time.Now()
	var federate []netip.AddrPort
	for _, c := range t.Clusters {
		if !o.Spec.IsUnjoined(c.Name) {
			federate = append(federate, netip.AddrPortFrom(c.ControlPlane.LANAddr.Addr(), monitoring.Port))
		}
	}
	err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		if o.Spec.IsUnjoined(cp.Cluster) {
			return nil
		}
		client, err := l.clientset(cp)
		if err != nil {
			return err
		}
		want := scrapeJobs{}
		if cp.Cluster == topology.HubName {
			if err := l.ensurePrometheus(ctx, cp, federate, client, o.timeout()); err != nil {
				return err
			}
			want[jobFederate] = len(federate)
			if want[jobHub], err = replicas(ctx, client, "strait-hub"); err != nil {
				return err
			}
		} else {
			if err := l.ensurePrometheus(ctx, cp, nil, client, o.timeout()); err != nil {
				return err
			}
			c, _ := t.Cluster(cp.Cluster)
			want[jobAgent] = len(c.Nodes)
			if want[jobDNS], err = replicas(ctx, client, "strait-dns"); err != nil {
				return err
			}
		}
		return waitPrometheus(ctx, t, cp.Cluster, want, o.timeout())
	})
	if err != nil {
		return fmt.Errorf("monitoring: %w", err)
	}
	l.progress("monitoring: Prometheus in %d clusters scrapes every agent, strait dns and strait hub (%.1fs); the hub's federates the members' at http://127.0.0.1:%d",
		len(federate)+1, time.Since(start).Seconds(), rec.PrometheusHostPort())
	return nil
}

// The jobs of the monitoring component's Prometheus configurations.
const (
	jobAgent    = "strait-agent"
	jobDNS      = "strait-dns"
	jobHub      = "strait-hub"
	jobFederate = "strait-federate"
)

// replicas is how many pods a Deployment of Strait's asks for.
func replicas(ctx context.Context, c kubernetes.Interface, name string) (int, error) {
	d, err := c.AppsV1().Deployments(straitv1.SystemNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 1, nil
	}
	return int(*d.Spec.Replicas), nil
}

// scrapeJobs are the jobs a cluster's Prometheus scrapes and how many targets each
// has when the lab is whole: every node's agent and strait dns's replicas in a member;
// strait hub's replicas and every member's Prometheus in the hub's.
type scrapeJobs map[string]int

// waitPrometheus waits until the cluster's Prometheus scrapes every target of want,
// each answering (health up), and says what is missing when timeout passes.
func waitPrometheus(ctx context.Context, t *topology.Lab, cluster string, want scrapeJobs, timeout time.Duration) error {
	api, err := PrometheusAPI(t, cluster)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = targetsUp(ctx, api, want); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s's Prometheus after %s: %w", cluster, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// targetsUp says which jobs of want lack targets, or have one that is not up.
func targetsUp(ctx context.Context, api promv1.API, want scrapeJobs) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tr, err := api.Targets(rctx)
	if err != nil {
		return err
	}
	up, seen := map[string]int{}, map[string]int{}
	var down []string
	for _, a := range tr.Active {
		job := string(a.Labels["job"])
		seen[job]++
		if a.Health == promv1.HealthGood {
			up[job]++
		} else {
			down = append(down, fmt.Sprintf("%s %s (%s: %s)", job, a.ScrapeURL, a.Health, a.LastError))
		}
	}
	var missing []string
	for job, n := range want {
		if up[job] != n {
			missing = append(missing, fmt.Sprintf("%s: %d of %d targets up (%d discovered)", job, up[job], n, seen[job]))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	if len(down) > 0 {
		missing = append(missing, "down: "+strings.Join(down, "; "))
	}
	return errors.New(strings.Join(missing, ", "))
}

// writeIfChanged writes data to path unless the file holds it already, and says
// whether it wrote.
func writeIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, writeAtomic(path, data)
}

// ensureMonitoringCRDs creates prometheus-operator's CRDs of the kinds the monitoring
// components use (lab/monitoring/crds) and waits until they are established, so that
// the install's kubectl apply finds the kinds served.
func ensureMonitoringCRDs(ctx context.Context, a *applier, timeout time.Duration) error {
	docs, err := crds.All()
	if err != nil {
		return err
	}
	var names []string
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return fmt.Errorf("monitoring CRD: %w", err)
		}
		if err := a.create(ctx, crd); err != nil {
			return err
		}
		names = append(names, crd.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := a.c.Get(ctx, client.ObjectKey{Name: name}, crd)
			if err == nil && crdEstablished(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established after %s: %w", name, timeout, errors.Join(err, ctx.Err()))
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
