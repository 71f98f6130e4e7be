package render

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/plan"
)

type renderOptions struct {
	file     string
	observed string
	clusters []string
	output   string
}

// NewCommand is `strait render`.
func NewCommand() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render -f FILE [--observed DIR] [--cluster NAME] [-o yaml|json]",
		Short: "Print every member's desired objects, offline",
		Long: `render computes what the hub would write into each member cluster for a ClusterSet,
without talking to any cluster. Each object carries the annotation
strait.io/target-cluster naming its member. Pipe one member's objects to kubectl:

  strait render -f clusterset.yaml --cluster c1 | kubectl --context c1 diff -f -
  strait render -f clusterset.yaml --cluster c1 | kubectl --context c1 apply --server-side -f -

--observed DIR reads what members hold, so imports can be previewed: DIR/<cluster>.yaml
or DIR/<cluster>/*.yaml, with Services, EndpointSlices, ServiceExports and Gateways as
'kubectl get -o yaml' prints them, and the kube-system Namespace (its UID says which
cluster it is: two clusters of one UID are one cluster registered twice, refused as
the hub refuses them).

With the ipsec cable each member also gets the Secret strait-ipsec-psk; render shows
it without data, which the hub copies from the ClusterSet's pskSecretRef.

An invalid ClusterSet exits with status 1 and prints one line per error, naming the
field, the value and what is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "ClusterSet YAML file, or - for standard input (required)")
	cmd.Flags().StringVar(&o.observed, "observed", "", "directory of observed member objects: DIR/<cluster>.yaml or DIR/<cluster>/*.yaml")
	cmd.Flags().StringSliceVar(&o.clusters, "cluster", nil, "render only these members (repeatable; default all)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runRender(o *renderOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	cs, err := readClusterSet(o.file, stdin)
	var fieldErrs utilerrors.Aggregate
	if errors.As(err, &fieldErrs) {
		for _, e := range fieldErrs.Errors() {
			fmt.Fprintln(stderr, e.Error())
		}
		return cli.ErrReported
	}
	if err != nil {
		return err
	}
	observed := plan.Observed{}
	if o.observed != "" {
		if observed, err = readObservedDir(o.observed); err != nil {
			return err
		}
	}
	p, errs := plan.Compute(cs, observed)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e.Error())
		}
		return cli.ErrReported
	}
	out, err := plan.Render(p, o.clusters, plan.Format(o.output))
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

func readClusterSet(file string, stdin io.Reader) (*straitv1.ClusterSet, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = plan.ReadAll("standard input", stdin)
	} else {
		var f *os.File
		if f, err = os.Open(file); err != nil {
			return nil, err
		}
		defer f.Close()
		data, err = plan.ReadAll(file, f)
	}
	if err != nil {
		return nil, err
	}
	cs, err := plan.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return cs, nil
}

// readObservedDir reads DIR/<cluster>.yaml and DIR/<cluster>/*.yaml files.
func readObservedDir(dir string) (plan.Observed, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading observed facts: %w", err)
	}
	observed := plan.Observed{}
	for _, e := range entries {
		var cluster string
		var files []string
		switch {
		case e.IsDir():
			cluster = e.Name()
			matches, err := filepath.Glob(filepath.Join(dir, cluster, "*.yaml"))
			if err != nil {
				return nil, err
			}
			more, _ := filepath.Glob(filepath.Join(dir, cluster, "*.yml"))
			files = append(matches, more...)
			sort.Strings(files)
		case strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml"):
			cluster = strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".yaml"), ".yml")
			files = []string{filepath.Join(dir, e.Name())}
		default:
			continue
		}
		f := observed[cluster]
		if f == nil {
			f = &plan.MemberFacts{}
			observed[cluster] = f
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("reading observed facts: %w", err)
			}
			if err := plan.DecodeObserved(file, data, f); err != nil {
				return nil, err
			}
		}
	}
	return observed, nil
}
