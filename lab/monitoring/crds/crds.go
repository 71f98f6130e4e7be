package crds

import (
	"embed"
	"fmt"
	"io/fs"
)

// files is the generated CRDs, one monitoring.coreos.com_<plural>.yaml per kind.
//
//go:embed *.yaml
var files embed.FS

// All returns each CRD's YAML document, sorted by file name.
func All() ([][]byte, error) {
	entries, err := fs.ReadDir(files, ".") // sorted by name
	if err != nil {
		return nil, err
	}
	docs := make([][]byte, 0, len(entries))
	for _, e := range entries {
		data, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, fmt.Errorf("monitoring CRD %s: %w", e.Name(), err)
		}
		docs = append(docs, data)
	}
	return docs, nil
}
