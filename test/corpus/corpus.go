package corpus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/straitnet/strait/test/clusters"
)

// Who must refuse a case: the CRD's OpenAPI schema (and the API server's strict
// decoding) or the hub's validating webhook (plan.Validate). The schema refuses first:
// a case it refuses never reaches the webhook, so a case the webhook must refuse is one
// the schema lets through.
const (
	BySchema  = "schema"
	ByWebhook = "webhook"
)

// Case is one invalid ClusterSet and the field paths its refusal must name.
type Case struct {
	// Name is the file's base name, e.g. "01-pod-cidr-host-bits.yaml".
	Name string
	Path string
	Data []byte
	// Want are the field paths from the file's "# want: PATH" header lines.
	Want []string
	// RefusedBy is BySchema or ByWebhook, from the file's "# refused-by: WHO" line.
	RefusedBy string
}

// invalidDir is where the cases are, from the repository's root.
const invalidDir = "plan/testdata/invalid"

// Dir is plan/testdata/invalid under the repository's root (found from the working
// directory up: a package's test runs in its directory), so any package's test can use
// it; not from this file's path, which under -trimpath (.ci/run) is an import path.
func Dir() string {
	root, err := clusters.RepoRoot()
	if err != nil {
		return invalidDir
	}
	return filepath.Join(root, invalidDir)
}

// Load reads every case; a file without a want line or without one refused-by line is
// an error, so that a case cannot pass by naming nothing or by being refused by anyone.
func Load() ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(Dir(), "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no invalid ClusterSets in %s", Dir())
	}
	cases := make([]Case, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := Case{Name: filepath.Base(f), Path: f, Data: data}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if rest, ok := strings.CutPrefix(line, "# want:"); ok {
				c.Want = append(c.Want, strings.TrimSpace(rest))
			}
			if rest, ok := strings.CutPrefix(line, "# refused-by:"); ok {
				if c.RefusedBy != "" {
					return nil, fmt.Errorf("%s: more than one \"# refused-by:\" line", f)
				}
				c.RefusedBy = strings.TrimSpace(rest)
			}
		}
		if len(c.Want) == 0 {
			return nil, fmt.Errorf("%s: no \"# want: PATH\" line", f)
		}
		if c.RefusedBy != BySchema && c.RefusedBy != ByWebhook {
			return nil, fmt.Errorf("%s: refused-by %q: want a line \"# refused-by: %s\" or \"# refused-by: %s\"", f, c.RefusedBy, BySchema, ByWebhook)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Missing returns the wanted paths that msg does not name. A path counts as named when
// it appears followed by ':', '.', '[', '"' or a space, so spec.clusters[1] is not taken
// for spec.clusters[10], while an error on spec.clusters[0].kubeConfig.secretRef names
// spec.clusters[0].kubeConfig.
func Missing(msg string, want []string) []string {
	var missing []string
	for _, w := range want {
		if !names(msg, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

func names(msg, path string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], path)
		if j < 0 {
			return false
		}
		end := i + j + len(path)
		if end == len(msg) || strings.ContainsRune(":.[\" ", rune(msg[end])) {
			return true
		}
		i = end
	}
}
