package labtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Git runs git in dir as a person at this machine would, with an identity of its own and
// the host's git configuration shut out, and fails the test on an error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@strait.invalid",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@strait.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
