package gitserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Handler serves the bare repositories under root (root/<name>.git is
// http://<host>/<name>.git) over smart HTTP, pushes included: the lab's repositories are
// written by people and tests, and `git http-backend` refuses receive-pack to an
// unauthenticated client unless http.receivepack is on.
func Handler(root string) (http.Handler, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git server: %w (install Debian's git)", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("git server root %q: %w", root, err)
	}
	env := append(isolatedEnv(),
		"GIT_PROJECT_ROOT="+abs,
		// Every repository under the root, without a git-daemon-export-ok file in each.
		"GIT_HTTP_EXPORT_ALL=1",
	)
	env = append(env, configEnv(map[string]string{"http.receivepack": "true"})...)
	return &cgi.Handler{Path: git, Args: []string{"http-backend"}, Env: env}, nil
}

// Server serves the bare repositories under Root. OnPush, when set, runs after every
// push git answered, with the repository's name (clusterset for /clusterset.git), as a
// forge's push webhook would call Flux's receiver.
type Server struct {
	Root   string
	OnPush func(repo string)
}

// Serve answers git clients on l with the repositories under root until ctx ends, then
// closes l. It returns nil after ctx ended and the error that stopped it otherwise.
func Serve(ctx context.Context, l net.Listener, root string) error {
	return Server{Root: root}.Serve(ctx, l)
}

// Serve is the package's Serve with the server's push hook.
func (s Server) Serve(ctx context.Context, l net.Listener) error {
	backend, err := Handler(s.Root)
	if err != nil {
		_ = l.Close()
		return err
	}
	h := backend
	if s.OnPush != nil {
		h = pushHook{next: backend, onPush: s.OnPush}
	}
	// A clone of a big repository streams for a while: no write timeout; a slow client
	// must still send its request headers promptly.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	err = srv.Serve(l)
	// After ctx ended, Shutdown is still draining the clones in flight; after a failure
	// the watcher must end too.
	cancel()
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("git server on %s: %w", l.Addr(), err)
}

// pushHook calls onPush after a push (POST /<name>.git/git-receive-pack) that the backend
// answered with 200.
type pushHook struct {
	next   http.Handler
	onPush func(repo string)
}

func (p pushHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	repo, isPush := strings.CutSuffix(r.URL.Path, ".git/git-receive-pack")
	if !isPush || r.Method != http.MethodPost {
		p.next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	p.next.ServeHTTP(sw, r)
	if sw.status == http.StatusOK {
		p.onPush(strings.TrimPrefix(repo, "/"))
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
