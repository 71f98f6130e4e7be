package file

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitCommit commits file alone (added first: it may be new), whatever else is staged,
// from the directory it is in; also the files given, which must be in the same
// directory (strait join --sops: the encrypted Secret and the kustomization beside it).
func GitCommit(file, msg string, stdout, stderr io.Writer, also ...string) error {
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	names := []string{base}
	for _, f := range also {
		names = append(names, filepath.Base(f))
	}
	for _, args := range [][]string{append([]string{"add", "--"}, names...), append([]string{"commit", "--quiet", "-m", msg, "--"}, names...)} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s of %s: %w", args[0], strings.Join(names, ", "), err)
		}
	}
	rev := exec.Command("git", "log", "-1", "--format=%h %s")
	rev.Dir = dir
	out, err := rev.Output()
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "committed %s", out)
	return err
}

// Rewrite writes data over file, keeping its permissions: the edited ClusterSet file.
func Rewrite(file string, data []byte) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, info.Mode().Perm())
}
