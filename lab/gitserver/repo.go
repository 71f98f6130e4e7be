package gitserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Branch is the one branch of the lab's repositories.
const Branch = "main"

// Author is who a commit is by and when. The same files, message, parent and Author give
// the same commit hash, so the lab's first commit is the same on every machine.
type Author struct {
	Name  string
	Email string
	When  time.Time
}

// LabAuthor is the author of the commits the lab makes itself, dated at a fixed instant.
func LabAuthor() Author {
	return Author{Name: "Strait Lab", Email: "lab@strait.invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (a Author) env() ([]string, error) {
	if a.Name == "" || a.Email == "" {
		return nil, fmt.Errorf("commit author %q <%s>: name and email must not be empty", a.Name, a.Email)
	}
	if a.When.IsZero() {
		return nil, fmt.Errorf("commit author %s: no date (zero time)", a.Name)
	}
	// git's internal date format: seconds since the epoch and a zone.
	date := fmt.Sprintf("%d %s", a.When.Unix(), a.When.Format("-0700"))
	return []string{
		"GIT_AUTHOR_NAME=" + a.Name, "GIT_AUTHOR_EMAIL=" + a.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + a.Name, "GIT_COMMITTER_EMAIL=" + a.Email, "GIT_COMMITTER_DATE=" + date,
	}, nil
}

// Repo is a bare repository on disk.
type Repo struct {
	// Dir is the bare repository's directory, like <root>/clusterset.git.
	Dir string
}

// Path is where Create puts the repository name under root: what Handler serves as
// /<name>.git.
func Path(root, name string) string { return filepath.Join(root, name+".git") }

// Create makes the bare repository root/<name>.git holding the files of dir as its first
// commit on Branch, and returns it with that commit's hash. The repository must not exist.
func Create(ctx context.Context, root, name, dir, message string, by Author) (Repo, string, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return Repo{}, "", fmt.Errorf("repository name %q: must be one path element, not starting with a dot", name)
	}
	r := Repo{Dir: Path(root, name)}
	if _, err := os.Stat(r.Dir); err == nil {
		return Repo{}, "", fmt.Errorf("repository %s: exists already", r.Dir)
	}
	if _, err := git(ctx, "", nil, nil, "init", "--quiet", "--bare", "--initial-branch="+Branch, r.Dir); err != nil {
		return Repo{}, "", err
	}
	head, err := r.CommitDir(ctx, dir, message, by)
	if err != nil {
		return Repo{}, "", err
	}
	return r, head, nil
}

// Head is the hash of Branch's last commit, "" when the repository has no commit yet.
func (r Repo) Head(ctx context.Context) (string, error) {
	out, err := r.git(ctx, nil, nil, "for-each-ref", "--format=%(objectname)", "refs/heads/"+Branch)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// File is the content of path (slash-separated, from the repository's root) at the
// commit rev.
func (r Repo) File(ctx context.Context, rev, path string) ([]byte, error) {
	if rev == "" || strings.ContainsAny(rev, ": \t\n") || strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("repository %s: revision %q: not a commit name", r.Dir, rev)
	}
	out, err := r.git(ctx, nil, nil, "cat-file", "blob", rev+":"+path)
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// CommitDir commits the files of dir as the whole next tree of Branch: files the head
// has and dir has not are removed, and files dir's .gitignore names are left out. It
// returns the new head (the old one when nothing changed).
func (r Repo) CommitDir(ctx context.Context, dir, message string, by Author) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("commit %s: %w", dir, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("commit %s: not a directory", dir)
	}
	return r.commit(ctx, message, by, func(env []string, _ string) error {
		// -C: the pathspec "." is the work tree's root only from inside it.
		_, err := r.git(ctx, append(env, "GIT_WORK_TREE="+abs), nil, "-C", abs, "add", "--all", ".")
		return err
	})
}

// Change commits changes to Branch's files: each path (slash-separated, relative to the
// repository's root) gets the content given, or is removed when it is nil. It returns the
// new head (the old one when nothing changed).
func (r Repo) Change(ctx context.Context, changes map[string][]byte, message string, by Author) (string, error) {
	if len(changes) == 0 {
		return "", fmt.Errorf("commit %q to %s: no changes", message, r.Dir)
	}
	paths := make([]string, 0, len(changes))
	for p := range changes {
		if c := path.Clean(p); c != p || p == "." || path.IsAbs(p) || strings.HasPrefix(p, "../") || p == ".." || strings.ContainsAny(p, "\t\n\x00") {
			return "", fmt.Errorf("commit %q to %s: path %q: must be relative, clean, inside the repository and without tabs or newlines", message, r.Dir, p)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return r.commit(ctx, message, by, func(env []string, head string) error {
		if head != "" {
			if _, err := r.git(ctx, env, nil, "read-tree", head); err != nil {
				return err
			}
		}
		// --index-info: a bare repository has no work tree, which --force-remove wants;
		// mode 0 removes the path.
		var info strings.Builder
		for _, p := range paths {
			if changes[p] == nil {
				fmt.Fprintf(&info, "0 %s\t%s\n", strings.Repeat("0", 40), p)
				continue
			}
			blob, err := r.git(ctx, env, changes[p], "hash-object", "-w", "--stdin")
			if err != nil {
				return err
			}
			fmt.Fprintf(&info, "100644 %s\t%s\n", strings.TrimSpace(blob), p)
		}
		_, err := r.git(ctx, env, []byte(info.String()), "update-index", "--index-info")
		return err
	})
}

// commit builds the next tree in a temporary index (fill stages it on top of head),
// commits it on top of the head and moves Branch there only if nobody moved it meanwhile:
// a bare repository has no index or work tree of its own, and a push may race a local
// commit. A tree equal to the head's is no commit: the head is returned.
func (r Repo) commit(ctx context.Context, message string, by Author, fill func(env []string, head string) error) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", fmt.Errorf("commit to %s: empty message", r.Dir)
	}
	authorEnv, err := by.env()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "strait-git-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := append(authorEnv, "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	head, err := r.Head(ctx)
	if err != nil {
		return "", err
	}
	if err := fill(env, head); err != nil {
		return "", fmt.Errorf("commit %q to %s: %w", message, r.Dir, err)
	}
	tree, err := r.git(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	tree = strings.TrimSpace(tree)
	args := []string{"commit-tree", tree, "-m", message}
	if head != "" {
		headTree, err := r.git(ctx, nil, nil, "rev-parse", head+"^{tree}")
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(headTree) == tree {
			return head, nil
		}
		args = append(args, "-p", head)
	}
	commit, err := r.git(ctx, env, nil, args...)
	if err != nil {
		return "", err
	}
	commit = strings.TrimSpace(commit)
	// The empty old value makes update-ref require that the branch does not exist yet.
	if _, err := r.git(ctx, env, nil, "update-ref", "-m", "strait lab commit", "refs/heads/"+Branch, commit, head); err != nil {
		return "", fmt.Errorf("commit %q to %s: %w", message, r.Dir, err)
	}
	return commit, nil
}

func (r Repo) git(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	return git(ctx, r.Dir, env, stdin, args...)
}

// git runs the git CLI on the bare repository gitDir ("" for none) with the host's and
// the user's configuration shut out, so a setting there cannot change a commit.
func git(ctx context.Context, gitDir string, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(append(os.Environ(), isolatedEnv()...), env...)
	if gitDir != "" {
		abs, err := filepath.Abs(gitDir)
		if err != nil {
			return "", fmt.Errorf("repository %s: %w", gitDir, err)
		}
		cmd.Env = append(cmd.Env, "GIT_DIR="+abs)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// isolatedEnv keeps /etc/gitconfig and ~/.gitconfig out of every git this package runs.
func isolatedEnv() []string {
	return []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
}

// configEnv sets git configuration through the environment (git 2.31 and later), for
// every repository the process touches.
func configEnv(settings map[string]string) []string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(keys))}
	for i, k := range keys {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, settings[k]))
	}
	return env
}
