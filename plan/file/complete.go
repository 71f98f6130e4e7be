package file

import (
	"os"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// Clusters and Exports read the ClusterSet file for shell completion (of -f's file):
// its clusters' names, and its exports as NAMESPACE/NAME (with narrowedOnly, only those
// exported from some clusters). A file that is missing or does not parse gives nothing.
func Clusters(file string) []string {
	cs := parseFile(file)
	if cs == nil {
		return nil
	}
	var out []string
	for _, c := range cs.Spec.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// Exports: see Clusters.
func Exports(file string, narrowedOnly bool) []string {
	cs := parseFile(file)
	if cs == nil {
		return nil
	}
	var out []string
	for _, e := range cs.Spec.Exports {
		if !narrowedOnly || len(e.Clusters) > 0 {
			out = append(out, e.Namespace+"/"+e.Name)
		}
	}
	return out
}

func parseFile(file string) *straitv1.ClusterSet {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	cs, err := plan.Parse(data)
	if err != nil {
		return nil
	}
	return cs
}
