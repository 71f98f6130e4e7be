package diff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/internal/udiff"
	"github.com/straitnet/strait/plan"
)

const (
	userAgent = "strait-diff"
	// requestTimeout bounds each request, so that an unreachable member is an error
	// after seconds, not a hang.
	requestTimeout = 20 * time.Second
)

// Exit statuses, kubectl diff's.
const (
	exitChanges = 1
	exitError   = 2
)

type options struct {
	file              string
	kubeconfig        string
	context           string
	namespace         string
	fieldManager      string
	memberKubeconfigs []string
}

// NewCommand is `strait diff`.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE [--kubeconfig HUB] [--member-kubeconfig NAME=FILE ...]",
		Short: "Show what a change to the ClusterSet file will do in the hub and in every member",
		Long: `diff shows, before a commit lands, what the ClusterSet file would change: in the hub and
in every member cluster. Nothing is written anywhere.

The hub: the file is sent as a server-side dry-run apply, so the CRD's schema and the
Strait webhook judge it, and the spec the hub would store is compared with the live
one. When server-side apply wrote the live ClusterSet (Flux, Argo CD with
ServerSideApply, kubectl apply --server-side), the dry run applies as the field manager
that owns its spec, so a field the file drops shows as dropped; --field-manager names
another. A refusal prints the webhook's field errors and exits with status 2.

The members: every member's objects are computed from the new ClusterSet and from what
is live in the members (Gateways, exported Services and EndpointSlices, ServiceExports,
allocations), exactly as the hub computes them, then dry-run applied in each member as
the hub applies them (field manager strait-hub) and compared with what the member
holds: Membership, Peers, GlobalIngresses, ServiceExports, ServiceImports,
EndpointSlices, the IPsec key's Secret (values masked), namespaces the hub would
create, and objects the hub would prune (labelled as the ClusterSet's but no longer
planned, and everything in a cluster that leaves).

Members are reached with the kubeconfig Secrets the ClusterSet names in the hub — the
same credentials the hub uses, so the dry runs are allowed where the hub's writes are;
reading them needs get on those Secrets — or, for a cluster named in
--member-kubeconfig NAME=FILE, with that file (its user needs what the hub's member role
grants, dry runs being checked as writes). A cluster without a
kubeConfig is the hub's own.

Output: one unified diff per object, headers naming cluster/apiVersion/Kind/namespace/name
("hub" for the ClusterSet itself). Exit status as kubectl diff: 0 no changes, 1 changes,
2 an error (a refusal, an unreachable member, a bad flag); the diffs of the clusters
that could be read are printed in any case.`,
		Example: `  # Preview a change against the hub of the current kubeconfig context:
  strait diff -f basic/clusterset.yaml

  # A hub in another kubeconfig; c2 reached with your own credentials:
  strait diff -f basic/clusterset.yaml --kubeconfig hub.kubeconfig --member-kubeconfig c2=c2.kubeconfig

  # In CI: fail the job on an error, not on a change.
  strait diff -f basic/clusterset.yaml; [ $? -le 1 ]

  # Only the hub's ClusterSet, with kubectl (the webhook answers its dry run too):
  kubectl diff -f basic/clusterset.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "ClusterSet YAML file, or - for standard input (required)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "the hub's kubeconfig (default: KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "the kubeconfig context of the hub (default: the current one)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the ClusterSet's namespace when the file names none (default strait-system)")
	f.StringVar(&o.fieldManager, "field-manager", "", "apply the ClusterSet as this field manager (default: the manager that applied the live spec)")
	f.StringArrayVar(&o.memberKubeconfigs, "member-kubeconfig", nil, "NAME=FILE: reach member NAME with this kubeconfig instead of its Secret in the hub (repeatable)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

func run(ctx context.Context, o *options, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.file == "" {
		return &cli.ExitStatus{Code: exitError, Err: errors.New("-f/--file is required: the ClusterSet file, or - for standard input")}
	}
	d, file, err := prepare(o, stdin)
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	diffs, err := d.diff(ctx, file)
	var refused *refusedError
	if errors.As(err, &refused) {
		fmt.Fprintf(stderr, "error: the hub refuses ClusterSet %s:\n", refused.name)
		for _, l := range refused.lines() {
			fmt.Fprintln(stderr, "  "+l)
		}
		return &cli.ExitStatus{Code: exitError}
	}
	changed, werr := printDiffs(stdout, diffs)
	if werr != nil {
		err = errors.Join(err, werr)
	}
	switch {
	case err != nil:
		return &cli.ExitStatus{Code: exitError, Err: err}
	case changed > 0:
		return &cli.ExitStatus{Code: exitChanges}
	}
	return nil
}

// differ holds the hub's connection for one run.
type differ struct {
	hub     client.Client
	conns   *connector
	manager string
}

func prepare(o *options, stdin io.Reader) (*differ, *unstructured.Unstructured, error) {
	data, err := readFile(o.file, stdin)
	if err != nil {
		return nil, nil, err
	}
	file, err := decodeClusterSet(o.file, data, o.namespace)
	if err != nil {
		return nil, nil, err
	}
	files, err := parseMemberKubeconfigs(o.memberKubeconfigs)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := hubConfig(o.kubeconfig, o.context)
	if err != nil {
		return nil, nil, err
	}
	kinds := scheme.New()
	hub, err := client.New(cfg, client.Options{Scheme: kinds})
	if err != nil {
		return nil, nil, fmt.Errorf("hub client: %w", err)
	}
	return &differ{hub: hub, manager: o.fieldManager, conns: &connector{
		hub: hub, hubConfig: cfg, namespace: file.GetNamespace(), files: files, scheme: kinds,
	}}, file, nil
}

func readFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return plan.ReadAll("standard input", stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return plan.ReadAll(name, f)
}

func parseMemberKubeconfigs(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		name, path, ok := strings.Cut(f, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--member-kubeconfig %q: want NAME=FILE, as c1=c1.kubeconfig", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--member-kubeconfig %q: cluster %s is given twice", f, name)
		}
		out[name] = path
	}
	return out, nil
}

func hubConfig(kubeconfig, context string) (*rest.Config, error) {
	cfg, err := cli.PersonConfig("the hub", kubeconfig, context, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	cfg.UserAgent, cfg.Timeout = userAgent, requestTimeout
	return cfg, nil
}

// diff computes every change, hub first, then the members in name order. An error
// about one member leaves the others' diffs in the result.
func (d *differ) diff(ctx context.Context, file *unstructured.Unstructured) ([]objectDiff, error) {
	after, live, err := dryRunClusterSet(ctx, d.hub, file, d.manager)
	if err != nil {
		return nil, err
	}
	var out []objectDiff
	hubDiff := objectDiff{cluster: "hub", id: objectID(after), merged: clusterSetView(after)}
	if live != nil {
		hubDiff.live = clusterSetView(live)
	}
	out = append(out, hubDiff)

	cs, err := typedClusterSet(after)
	if err != nil {
		return out, err
	}
	var liveCS *straitv1.ClusterSet
	if live != nil {
		if liveCS, err = typedClusterSet(live); err != nil {
			return out, err
		}
	}
	if err := d.checkMemberFlags(cs, liveCS); err != nil {
		return out, err
	}
	more, err := d.memberDiffs(ctx, cs, liveCS)
	return append(out, more...), err
}

// checkMemberFlags refuses a --member-kubeconfig for a cluster neither ClusterSet has.
func (d *differ) checkMemberFlags(cs, live *straitv1.ClusterSet) error {
	known := map[string]bool{}
	for _, t := range targets(cs, live) {
		known[t.name] = true
	}
	for name, path := range d.conns.files {
		if !known[name] {
			return fmt.Errorf("--member-kubeconfig %s=%s: no cluster %s in the ClusterSet", name, path, name)
		}
	}
	return nil
}

// targets are the clusters of the new ClusterSet and, marked as leaving, the clusters
// of the live one (spec and status, as the hub remembers them) that it drops.
func targets(cs, live *straitv1.ClusterSet) []memberTarget {
	var out []memberTarget
	in := map[string]bool{}
	for _, c := range cs.Spec.Clusters {
		out = append(out, memberTarget{name: c.Name, kubeConfig: c.KubeConfig})
		in[c.Name] = true
	}
	if live != nil {
		for _, c := range live.Spec.Clusters {
			if !in[c.Name] {
				out = append(out, memberTarget{name: c.Name, kubeConfig: c.KubeConfig, left: true})
				in[c.Name] = true
			}
		}
		for _, c := range live.Status.Clusters {
			if !in[c.Name] {
				out = append(out, memberTarget{name: c.Name, kubeConfig: c.KubeConfig, left: true})
				in[c.Name] = true
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// memberDiffs reads the facts of every member of the new ClusterSet, computes the plan
// from them as the hub does, and diffs each member against it.
func (d *differ) memberDiffs(ctx context.Context, cs, live *straitv1.ClusterSet) ([]objectDiff, error) {
	spec, ferrs := plan.Check(cs)
	if len(ferrs) > 0 {
		// Only without the webhook: the hub would stall on it and change nothing.
		return nil, fmt.Errorf("the hub would stall on this ClusterSet (is its webhook installed?): %w", ferrs.ToAggregate())
	}
	var errs []error
	clients := map[string]client.Client{}
	observed := plan.Observed{}
	for _, t := range targets(cs, live) {
		mc, err := d.conns.client(ctx, t)
		if err == nil && !t.left {
			observed[t.name], err = controllers.ReadMemberFacts(ctx, mc, cs, t.name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", t.name, err))
			continue
		}
		clients[t.name] = mc
	}
	// An unreachable member counts as holding nothing, as for the hub; its own diff is
	// left out and the error says so.
	for _, c := range cs.Spec.Clusters {
		if observed[c.Name] == nil {
			observed[c.Name] = &plan.MemberFacts{}
		}
	}
	p, ferrs := spec.Compute(observed)
	if len(ferrs) > 0 {
		return nil, errors.Join(append(errs, fmt.Errorf("the hub would stall on this ClusterSet: %w", ferrs.ToAggregate()))...)
	}
	key := types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}
	var out []objectDiff
	for _, t := range targets(cs, live) {
		mc := clients[t.name]
		if mc == nil {
			continue
		}
		var objs []client.Object
		if !t.left {
			var err error
			if objs, err = withPSK(ctx, d.hub, p, p.Objects(t.name)); err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", t.name, err))
			}
		}
		diffs, err := memberDiffs(ctx, mc, t.name, key, objs)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", t.name, err))
			continue
		}
		out = append(out, diffs...)
	}
	return out, errors.Join(errs...)
}

// printDiffs prints the objects that change, as unified diffs of their YAML, and says
// how many changed.
func printDiffs(w io.Writer, diffs []objectDiff) (int, error) {
	n := 0
	for _, d := range diffs {
		maskSecret(&d)
		from, err := toYAML(d.live)
		if err != nil {
			return n, err
		}
		to, err := toYAML(d.merged)
		if err != nil {
			return n, err
		}
		name := d.cluster + "/" + d.id
		text := udiff.Unified(name+" (live)", name+" (merged)", from, to)
		if text == "" {
			continue
		}
		if _, err := io.WriteString(w, text); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func toYAML(m map[string]any) (string, error) {
	if m == nil {
		return "", nil
	}
	b, err := yaml.Marshal(m)
	return string(b), err
}
