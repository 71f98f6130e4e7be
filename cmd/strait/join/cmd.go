package join

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/udiff"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/plan/file"
)

const (
	userAgent = "strait-join"
	// requestTimeout bounds each request: an unreachable cluster is an error after
	// seconds, not a hang.
	requestTimeout = 15 * time.Second
	// exitRefused: unjoin of a cluster git still names, join of a cluster the hub has
	// under another name.
	exitRefused = 2
)

// flags shared by join and unjoin.
type options struct {
	kubeconfig, context       string // the member, the person's own credentials
	hubKubeconfig, hubContext string
	namespace, secretName     string
	file, message             string
	commit                    bool
	timeout                   time.Duration
	output                    string
	// alsoCommit are files beside the ClusterSet file that --commit commits with it.
	alsoCommit []string
}

func (o *options) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "the member's kubeconfig, with your own credentials there (default: KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "the member's context in that kubeconfig (default: its current context)")
	f.StringVar(&o.hubKubeconfig, "hub-kubeconfig", "", "the hub's kubeconfig: the member's kubeconfig Secret is written there")
	f.StringVar(&o.hubContext, "hub-context", "", "the hub's context (in --hub-kubeconfig, or in KUBECONFIG)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the ClusterSet's namespace in the hub (default: the file's, else "+straitv1.SystemNamespace+")")
	f.StringVar(&o.secretName, "secret-name", "", "the kubeconfig Secret's name in the hub (default: NAME-kubeconfig)")
	f.StringVarP(&o.file, "file", "f", "", "the ClusterSet file in a git working tree to change")
	f.BoolVar(&o.commit, "commit", false, "commit the file with git (that file alone)")
	f.StringVarP(&o.message, "message", "m", "", "the commit message")
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: for people)")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names, _ := cli.Contexts(o.kubeconfig)
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("hub-context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names, _ := cli.Contexts(o.hubKubeconfig)
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

func (o *options) toHub() bool { return o.hubKubeconfig != "" || o.hubContext != "" }

func (o *options) check(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	if o.output != "" && o.output != "json" && o.output != "yaml" {
		return fmt.Errorf("-o/--output %q: want json or yaml (or nothing, for people)", o.output)
	}
	if o.commit && o.file == "" {
		return errors.New("--commit: give the ClusterSet file to commit with -f")
	}
	if o.secretName != "" {
		if errs := validation.IsDNS1123Subdomain(o.secretName); len(errs) > 0 {
			return fmt.Errorf("--secret-name %q: %s", o.secretName, strings.Join(errs, "; "))
		}
	}
	return nil
}

// secretRef is the kubeconfig Secret's namespace and name: the flags', else the file's
// namespace and NAME-kubeconfig.
func (o *options) secretRef(name string) (namespace, secret string, err error) {
	namespace, secret = o.namespace, o.secretName
	if secret == "" {
		secret = name + "-kubeconfig"
	}
	if namespace == "" && o.file != "" {
		data, err := os.ReadFile(o.file)
		if err != nil {
			return "", "", err
		}
		cs, err := plan.Parse(data)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", o.file, err)
		}
		namespace = cs.Namespace
	}
	if namespace == "" {
		namespace = straitv1.SystemNamespace
	}
	return namespace, secret, nil
}

// Result is what -o json|yaml prints.
type Result struct {
	Cluster string `json:"cluster"`
	// TokenSecret is the member's hub-access token Secret; TokenCreated says join
	// created it (it was missing, or --rotate replaced it).
	TokenSecret  string `json:"tokenSecret,omitempty"`
	TokenCreated bool   `json:"tokenCreated,omitempty"`
	TokenDeleted bool   `json:"tokenDeleted,omitempty"`
	// Installed is how many objects --install applied.
	Installed int `json:"installed,omitempty"`
	// HubSecret is the kubeconfig Secret in the hub, namespace/name.
	HubSecret        string `json:"hubSecret,omitempty"`
	HubSecretWritten string `json:"hubSecretWritten,omitempty"` // created | replaced | deleted
	// SOPSFile is where --sops wrote the Secret, encrypted; Kustomization the
	// kustomization.yaml that now names it.
	SOPSFile      string `json:"sopsFile,omitempty"`
	Kustomization string `json:"kustomization,omitempty"`
	// Observed are the member's CIDRs as its API server tells them.
	Observed *observed `json:"observed,omitempty"`
	// Entry is the ClusterSet's spec.clusters entry.
	Entry string `json:"entry,omitempty"`
	// File, Diff and Commit: the ClusterSet file changed, the change, the commit.
	File   string `json:"file,omitempty"`
	Diff   string `json:"diff,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// entryText is the spec.clusters entry as a person pastes it into the ClusterSet.
func entryText(m file.Member) string {
	quoted := func(l []string) string {
		q := make([]string, len(l))
		for i, s := range l {
			q[i] = `"` + s + `"`
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprintf("- name: %s\n  kubeConfig: {secretRef: {name: %s}}\n  podCIDRs: %s\n  serviceCIDRs: %s\n",
		m.Name, m.SecretName, quoted(m.PodCIDRs), quoted(m.ServiceCIDRs))
}

// changeFile edits the ClusterSet file with edit, writes it, and with --commit commits
// it. A file already as asked is no error: it is said and left alone.
func (o *options) changeFile(r *Result, edit func([]byte) ([]byte, error), defaultMessage string, progress func(string, ...any)) error {
	data, err := os.ReadFile(o.file)
	if err != nil {
		return err
	}
	after, err := edit(data)
	if file.IsNoChange(err) {
		progress("%s: %v", o.file, err)
		if !o.commit || len(o.alsoCommit) == 0 {
			return nil
		}
		// The file stays; what join wrote beside it (a rotated Secret) is committed.
		after = data
	} else if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	if err := file.Rewrite(o.file, after); err != nil {
		return err
	}
	r.File = o.file
	if string(after) != string(data) {
		r.Diff = udiff.File(o.file, string(data), string(after))
	}
	if !o.commit {
		return nil
	}
	msg := o.message
	if msg == "" {
		msg = defaultMessage
	}
	var out strings.Builder
	if err := file.GitCommit(o.file, msg, &out, &out, o.alsoCommit...); err != nil {
		return fmt.Errorf("%w\n%s", err, out.String())
	}
	r.Commit = strings.TrimSpace(strings.TrimPrefix(out.String(), "committed "))
	return nil
}

// notIn is the names of all that are not in taken.
func notIn(all, taken []string) []string {
	var out []string
	for _, n := range all {
		if !slices.Contains(taken, n) {
			out = append(out, n)
		}
	}
	return out
}

// addResource names file in the resources of a kustomization.yaml (kept as it is
// otherwise); it says whether it added it. A missing kustomization is os.ErrNotExist.
func addResource(kustomization, file string) (bool, error) {
	data, err := os.ReadFile(kustomization)
	if err != nil {
		return false, err
	}
	doc, err := kyaml.Parse(string(data))
	if err != nil {
		return false, fmt.Errorf("%s: %w", kustomization, err)
	}
	res, err := doc.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "resources"))
	if err != nil {
		return false, err
	}
	for _, n := range res.YNode().Content {
		if n.Value == file {
			return false, nil
		}
	}
	if err := res.PipeE(kyaml.Append(&kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: file})); err != nil {
		return false, err
	}
	out, err := doc.String()
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(kustomization, []byte(out), 0o644)
}
