package corpus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Case is one invalid ClusterSet and the field paths its refusal must name.
type Case struct {
	// Name is the file's base name, e.g. "01-pod-cidr-host-bits.yaml".
	Name string
	Path string
	Data []byte
	// Want are the field paths from the file's "# want: PATH" header lines.
	Want []string
}

// Dir is plan/testdata/invalid, found from this file so any package's test can use it.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "plan", "testdata", "invalid")
}

// Load reads every case; a file without a want line is an error, so that a case
// cannot pass by naming nothing.
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
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# want:"); ok {
				c.Want = append(c.Want, strings.TrimSpace(rest))
			}
		}
		if len(c.Want) == 0 {
			return nil, fmt.Errorf("%s: no \"# want: PATH\" line", f)
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
