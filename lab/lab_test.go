package lab

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathsFromFlagsAreAbsolute: `strait lab up --k8s-bin bin/k8s/v1.37.1` means the
// directory where the person typed it, though the lab's processes start elsewhere.
func TestPathsFromFlagsAreAbsolute(t *testing.T) {
	l := New(Options{K8sBin: "bin/k8s/v1.37.1", CoreDNS: "bin/coredns", StateDir: "state"})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.opts.bin("kubelet"), filepath.Join(wd, "bin/k8s/v1.37.1/kubelet"); got != want {
		t.Errorf("kubelet = %s, want %s", got, want)
	}
	if got, want := l.State().Dir, filepath.Join(wd, "state"); got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if l.opts.NodeBin != "" {
		t.Errorf("an unset NodeBin became %q", l.opts.NodeBin)
	}
}
