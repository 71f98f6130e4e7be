package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/cobra"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/plan/file"
)

type joinOptions struct {
	options
	server       string
	install      string
	rotate       bool
	sops         string
	sopsFile     string
	podCIDRs     []string
	serviceCIDRs []string
}

// NewJoinCommand is `strait join`.
func NewJoinCommand() *cobra.Command {
	o := &joinOptions{options: options{timeout: time.Minute}}
	cmd := &cobra.Command{
		Use:   "join NAME --kubeconfig MEMBER (--hub-kubeconfig HUB | --hub-context CTX) [-f clusterset.yaml [--commit]]",
		Short: "Register a cluster as a member: its hub-access token, the hub's kubeconfig Secret for it, its ClusterSet entry",
		Long: `join does the four steps of docs/hub.md for a new member, with your own credentials for
the member (--kubeconfig, --context) and for the hub (--hub-kubeconfig, --hub-context):

  1. with --install DIR, applies kustomize/member (or your overlay over it: the images,
     charon's --libipsec on kernels without ESP) to the member, server-side, as
     kubectl apply --server-side -k DIR does;
  2. creates the token Secret strait-system/strait-hub-access-token in the member if it
     is missing, and waits for its token (--rotate deletes it first: the old token stops
     working within seconds: an API server keeps a token it accepted for 10 s);
  3. writes the kubeconfig the hub reaches the member with (that token, the member's CA,
     its API server: the kubeconfig's, or --server when the hub reaches it at another
     address) into the hub as the Secret NAME-kubeconfig, key value, in the ClusterSet's
     namespace: out of band, never in git;
  4. prints the member's spec.clusters entry with the CIDRs its API server tells: the pod
     CIDR summarised from the nodes' spec.podCIDRs (the smallest prefix holding them all;
     write kube-controller-manager's --cluster-cidr with --pod-cidr when it is wider),
     the service CIDRs from the ServiceCIDR API. With -f it adds the entry to your
     ClusterSet file instead (comments and layout kept, validated as strait render
     validates), prints the diff, and with --commit commits it.

Push the commit: Flux or Argo CD applies it and the hub connects the member. Nothing in
the ClusterSet is written to the hub by join.

With --sops AGE_RECIPIENT the Secret of step 3 goes into the clusterset repo instead of
the hub, SOPS-encrypted to that age recipient (the format Flux's kustomize-controller
decrypts): NAME-kubeconfig.enc.yaml beside the -f file (--sops-file), added to the
resources of the kustomization.yaml beside it, and committed with the file by --commit.
The Kustomization that applies the repo needs decryption: {provider: sops, secretRef:
{name: sops-age}}, whose Secret holds the age identity (docs/gitops.md).

Before any of it, join refuses (exit 2) a cluster the hub already has under another
name: the hub records each member's kube-system namespace UID in the ClusterSet's
status.clusters when it connects, and join reads the new cluster's. One cluster is one
member; with --sops there is no hub to ask, and the hub stalls the ClusterSet instead.

Progress goes to standard error. Exit status: 0 done, 1 an error, 2 refused (the cluster
is a member under another name).`,
		Example: `  # Register c3, its CIDRs into the ClusterSet file, and commit:
  strait join c3 --kubeconfig c3.kubeconfig --hub-context hub -f clusterset/clusterset.yaml --commit
  git push

  # Install Strait in c3 first, from an overlay over kustomize/member:
  strait join c3 --kubeconfig c3.kubeconfig --install deploy/c3 --hub-context hub

  # The hub reaches c3's API server at another address than you do:
  strait join c3 --kubeconfig c3.kubeconfig --server https://10.250.3.2:6443 --hub-context hub

  # The hub's Secret SOPS-encrypted into the repo instead (Flux decrypts it):
  strait join c3 --kubeconfig c3.kubeconfig --sops age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p -f clusterset/clusterset.yaml --commit

  # A new token for c3 (the old one stops working), the hub's Secret replaced:
  strait join c3 --rotate --kubeconfig c3.kubeconfig --hub-context hub

  # In a script:
  strait join c3 --kubeconfig c3.kubeconfig --hub-context hub -o json | jq -r .observed.podCIDR`,
		Args: cobra.ExactArgs(1),
		// A new member's name is often its context's: the member kubeconfig's contexts
		// that the ClusterSet file (-f) does not have yet.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names, _ := cli.Contexts(o.kubeconfig)
			return notIn(names, file.Clusters(o.file)), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runJoin(cli.Context(cmd), o, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "the member's API server URL as the hub reaches it (default: the member kubeconfig's)")
	f.StringVar(&o.install, "install", "", "apply this kustomization to the member first (kustomize/member or an overlay over it)")
	f.BoolVar(&o.rotate, "rotate", false, "replace the member's hub-access token (the old one stops working) and the hub's Secret")
	f.StringVar(&o.sops, "sops", "", "AGE_RECIPIENT: write the Secret SOPS-encrypted into the repo instead of the hub")
	f.StringVar(&o.sopsFile, "sops-file", "", "where --sops writes the Secret (default: NAME-kubeconfig.enc.yaml beside -f's file)")
	f.StringSliceVar(&o.podCIDRs, "pod-cidr", nil, "the member's pod CIDRs (default: summarised from its nodes' spec.podCIDRs)")
	f.StringSliceVar(&o.serviceCIDRs, "service-cidr", nil, "the member's service CIDRs (default: the ServiceCIDR API's)")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for the token and for --install's kinds")
	_ = cmd.MarkFlagDirname("install")
	return cmd
}

func runJoin(ctx context.Context, o *joinOptions, name string, stdout, stderr io.Writer) error {
	if err := o.check(name); err != nil {
		return err
	}
	switch {
	case o.sops != "" && o.toHub():
		return errors.New("--sops and --hub-kubeconfig/--hub-context: the Secret goes either into the repo, encrypted, or into the hub; give one")
	case o.sops == "" && !o.toHub():
		return errors.New("where does the member's kubeconfig Secret go? give the hub's --hub-kubeconfig or --hub-context, or --sops AGE_RECIPIENT for the repo")
	case o.sopsFile != "" && o.sops == "":
		return errors.New("--sops-file: give the age recipient with --sops")
	}
	if o.sops != "" {
		if _, err := age.ParseX25519Recipient(o.sops); err != nil {
			return fmt.Errorf("--sops %q: not an age recipient (age1…): %w", o.sops, err)
		}
	}
	if o.server != "" {
		if u, err := url.Parse(o.server); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--server %q: want the API server's https URL, such as https://10.250.3.2:6443", o.server)
		}
	}
	for _, c := range append(append([]string{}, o.podCIDRs...), o.serviceCIDRs...) {
		if p, err := netip.ParsePrefix(c); err != nil || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			return fmt.Errorf("--pod-cidr/--service-cidr %q: want a network address and prefix length, such as 10.8.0.0/16 or fd10:8::/56", c)
		}
	}
	namespace, secretName, err := o.secretRef(name)
	if err != nil {
		return err
	}
	progress := cli.Progress(stderr)
	r := &Result{Cluster: name, TokenSecret: straitv1.SystemNamespace + "/" + HubAccessToken, HubSecret: namespace + "/" + secretName}
	m, err := connectMember(o.kubeconfig, o.context)
	if err != nil {
		return err
	}
	var h *hub
	if o.sops == "" {
		if h, err = connectHub(o.hubKubeconfig, o.hubContext); err != nil {
			return err
		}
		if err := refuseKnownCluster(ctx, m, h, name); err != nil {
			return err
		}
	} else {
		progress("no hub to ask whether it has this cluster under another name (--sops): if it does, the hub stalls the ClusterSet, naming both entries")
	}
	if o.install != "" {
		start := time.Now()
		progress("installing Strait in %s from %s (server-side apply)", name, o.install)
		if r.Installed, err = m.install(ctx, o.install, o.timeout); err != nil {
			return err
		}
		progress("applied %d objects in %.1fs", r.Installed, time.Since(start).Seconds())
	}
	tok, err := m.ensureToken(ctx, o.rotate, o.timeout, progress)
	if err != nil {
		return err
	}
	r.TokenCreated = tok.created
	obs, err := m.observe(ctx)
	if err != nil && (len(o.podCIDRs) == 0 || len(o.serviceCIDRs) == 0) {
		return err
	}
	r.Observed = &obs
	entry := file.Member{Name: name, SecretName: secretName, PodCIDRs: o.podCIDRs, ServiceCIDRs: o.serviceCIDRs}
	if len(entry.PodCIDRs) == 0 {
		entry.PodCIDRs = obs.PodCIDRs
		if len(entry.PodCIDRs) == 0 {
			return fmt.Errorf("%s: no node has a spec.podCIDRs to summarise (kube-controller-manager without --allocate-node-cidrs?): give --pod-cidr", name)
		}
		progress("pod CIDRs %s, the smallest prefix per family holding the nodes' %s (write kube-controller-manager's --cluster-cidr with --pod-cidr if it is wider)",
			strings.Join(entry.PodCIDRs, ", "), strings.Join(obs.NodePodCIDRs, ", "))
	}
	if len(entry.ServiceCIDRs) == 0 {
		entry.ServiceCIDRs = obs.ServiceCIDRs
		if len(entry.ServiceCIDRs) == 0 {
			return fmt.Errorf("%s: the ServiceCIDR API lists no service CIDR: give --service-cidr", name)
		}
		progress("service CIDRs %s, from the ServiceCIDR API", strings.Join(entry.ServiceCIDRs, ", "))
	}
	kc, err := m.hubKubeconfig(name, o.server, tok)
	if err != nil {
		return err
	}
	if h != nil {
		replaced, err := h.writeSecret(ctx, kubeconfigSecret(namespace, secretName, name, kc))
		if err != nil {
			return err
		}
		r.HubSecretWritten = "created"
		if replaced {
			r.HubSecretWritten = "replaced"
		}
		progress("%s Secret %s in the hub (key %s: the kubeconfig of %s, server %s)", r.HubSecretWritten, r.HubSecret, kubeconfigKey, HubAccessAccount, serverOf(o.server, m))
	} else if err := o.writeSOPS(r, namespace, secretName, kc, progress); err != nil {
		return err
	}
	r.Entry = entryText(entry)
	if o.file != "" {
		if err := o.changeFile(r, func(data []byte) ([]byte, error) { return file.AddCluster(data, entry) },
			"clusterset: join "+name, progress); err != nil {
			return err
		}
	}
	if o.output != "" {
		return cli.PrintJSONOrYAML(stdout, r, o.output)
	}
	switch {
	case r.Diff != "":
		_, err = io.WriteString(stdout, r.Diff)
	case o.file == "":
		_, err = fmt.Fprintf(stdout, "# %s's entry for spec.clusters of the ClusterSet (git):\n%s", name, r.Entry)
	}
	if err != nil {
		return err
	}
	if r.Commit != "" {
		_, err = fmt.Fprintf(stdout, "committed %s\n", r.Commit)
	}
	return err
}

// refuseKnownCluster refuses (exit 2) to join a cluster the hub has under another name:
// one cluster is one member, its name its cluster ID. The hub records which cluster
// each member is (status.clusters[].kubeSystemUID) when it connects; join compares the
// new cluster's kube-system UID with those. The same name again is a rejoin (--rotate)
// and passes.
func refuseKnownCluster(ctx context.Context, m *member, h *hub, name string) error {
	uid, err := m.kubeSystemUID(ctx)
	if err != nil {
		return err
	}
	known, err := h.memberOfUID(ctx, uid)
	if err != nil {
		return err
	}
	for _, k := range known {
		switch {
		case k.name == name:
			continue
		case k.inSpec:
			return exitError(exitRefused, fmt.Errorf(
				"the cluster --kubeconfig reaches is already a member as %s: ClusterSet %s status.clusters[%s].kubeSystemUID is %s, the UID of its kube-system namespace; "+
					"one cluster is one member: keep the name %s (strait join %s --rotate for a new token), or take it out first (strait unjoin %s) and join it as %s then",
				k.name, k.clusterSet, k.name, uid, k.name, k.name, k.name, name))
		default:
			return exitError(exitRefused, fmt.Errorf(
				"the cluster --kubeconfig reaches left ClusterSet %s as %s, and the hub is still removing what it wrote there (status.clusters[%s].kubeSystemUID is %s, the UID of its kube-system namespace): "+
					"wait until it is pruned (strait unjoin %s --hub-context HUB waits for it), then join it as %s",
				k.clusterSet, k.name, k.name, uid, k.name, name))
		}
	}
	return nil
}

func serverOf(server string, m *member) string {
	if server != "" {
		return server
	}
	return m.cfg.Host
}

// exitError makes err exit with code (cli.Main prints it).
func exitError(code int, err error) error { return &cli.ExitStatus{Code: code, Err: err} }

// writeSOPS writes the kubeconfig Secret SOPS-encrypted into the repo, and names it in
// the kustomization.yaml beside it when there is one; --commit commits both with the file.
func (o *joinOptions) writeSOPS(r *Result, namespace, secretName string, kc []byte, progress func(string, ...any)) error {
	path := o.sopsFile
	if path == "" {
		path = filepath.Join(filepath.Dir(o.file), secretName+".enc.yaml")
		if o.file == "" {
			path = secretName + ".enc.yaml"
		}
	}
	data, err := SOPSSecret(namespace, secretName, kubeconfigKey, string(kc), o.sops, time.Now(), nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	r.SOPSFile = path
	progress("wrote Secret %s/%s SOPS-encrypted to %s (age recipient %s): commit it; Flux decrypts it with the identity", namespace, secretName, path, o.sops)
	kust := filepath.Join(filepath.Dir(path), "kustomization.yaml")
	added, err := addResource(kust, filepath.Base(path))
	switch {
	case errors.Is(err, os.ErrNotExist):
		progress("no %s beside it: name %s in the resources of the Kustomization that applies the ClusterSet", kust, filepath.Base(path))
	case err != nil:
		return err
	case added:
		r.Kustomization = kust
		progress("added %s to the resources of %s", filepath.Base(path), kust)
	}
	if o.file != "" && filepath.Dir(path) == filepath.Dir(o.file) {
		o.alsoCommit = append(o.alsoCommit, path)
		if r.Kustomization != "" {
			o.alsoCommit = append(o.alsoCommit, kust)
		}
	}
	return nil
}
