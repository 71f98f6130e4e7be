package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeedPathFollowsTheImagesAndContainerd checks a seed is found again for the same
// images in any order, and not after an image or containerd was rebuilt; a rebuilt set
// keeps its set's name, by which saveSeed removes the older seed.
func TestSeedPathFollowsTheImagesAndContainerd(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := Config{Name: "n", BinDir: dir, Seeds: filepath.Join(dir, "seeds"), Images: []string{file("pause.tar"), file("tools.tar")}}
	file("containerd")
	path := func(c Config) string {
		p, err := SeedPath(c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := path(c)
	if filepath.Dir(first) != c.Seeds {
		t.Fatalf("seed %s is not in %s", first, c.Seeds)
	}
	reordered := c
	reordered.Images = []string{c.Images[1], c.Images[0]}
	if got := path(reordered); got != first {
		t.Errorf("the same images in another order: seed %s, want %s", got, first)
	}
	set := func(p string) string { s, _, _ := strings.Cut(filepath.Base(p), "-"); return s }
	for _, rebuilt := range []string{c.Images[1], filepath.Join(dir, "containerd")} {
		later := time.Now().Add(time.Duration(len(rebuilt)) * time.Second)
		if err := os.Chtimes(rebuilt, later, later); err != nil {
			t.Fatal(err)
		}
		got := path(c)
		if got == first {
			t.Errorf("after %s was rebuilt the seed is still %s", filepath.Base(rebuilt), got)
		}
		if set(got) != set(first) {
			t.Errorf("after %s was rebuilt the set's name changed: %s, was %s", filepath.Base(rebuilt), got, first)
		}
		first = got
	}
	other := c
	other.Images = c.Images[:1]
	if set(path(other)) == set(first) {
		t.Errorf("another image set has the same set name as %s", first)
	}
	if p, err := SeedPath(Config{Images: c.Images}); p != "" || err != nil {
		t.Errorf("with no Seeds directory: %q, %v; want no seed", p, err)
	}
	c.Images = append(c.Images, filepath.Join(dir, "missing.tar"))
	if _, err := SeedPath(c); err == nil || !strings.Contains(err.Error(), "missing.tar") {
		t.Errorf("a missing image: %v, want an error naming it", err)
	}
}
