package flux

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/test/clusters"
)

// labSync is a Sync as the lab makes one.
func labSync() Sync {
	return Sync{URL: "http://10.250.0.2:8080/clusterset.git", Branch: "main", Path: "./clusterset",
		TargetNamespace: "strait-system", GitInterval: time.Minute, Interval: 10 * time.Minute,
		RetryInterval: 15 * time.Second, Timeout: 30 * time.Second}
}

// TestSyncIsTheExampleWiring: the lab syncs its repo with the objects of
// examples/clusterset/flux, differing only in the URL, the path and the durations.
func TestSyncIsTheExampleWiring(t *testing.T) {
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := labSync().SyncFiles()
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][]string{
		"gitrepository.yaml": {"spec.url", "spec.interval"},
		"sync.yaml":          {"spec.path", "spec.interval", "spec.retryInterval", "spec.timeout"},
	}
	for name, differ := range own {
		example := readObject(t, filepath.Join(root, "examples", "clusterset", "flux", name))
		lab := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(files[name], &lab.Object); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, field := range differ {
			unstructured.RemoveNestedField(example.Object, strings.Split(field, ".")...)
			unstructured.RemoveNestedField(lab.Object, strings.Split(field, ".")...)
		}
		if !reflect.DeepEqual(example.Object, lab.Object) {
			t.Errorf("%s: the lab's differs from the example's beyond %v:\nlab:     %v\nexample: %v", name, differ, lab.Object, example.Object)
		}
	}
	example := readObject(t, filepath.Join(root, "examples", "clusterset", "flux", "kustomization.yaml"))
	lab := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(files["kustomization.yaml"], &lab.Object); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(example.Object, lab.Object) {
		t.Errorf("flux/kustomization.yaml: lab %v, example %v", lab.Object, example.Object)
	}
}

func TestSyncRefusesWhatFluxWouldRefuse(t *testing.T) {
	for name, mutate := range map[string]func(*Sync){
		"timeout": func(s *Sync) { s.Timeout = 0 },
		"url":     func(s *Sync) { s.URL = "" },
		"path":    func(s *Sync) { s.Path = "" },
	} {
		s := labSync()
		mutate(&s)
		if _, err := s.Objects(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("a sync without %s: error %v, want one naming it", name, err)
		}
	}
}
