package main

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/straitnet/strait/lab/image"
)

// The images' repositories; the tag is Build.Version.
const (
	StraitdRepo = "strait/straitd"
	CharonRepo  = "strait/charon"
)

// Source is the org.opencontainers.image.source label: the module path as a URL.
const Source = "https://github.com/straitnet/strait"

// cliPkg holds the variables `straitd version` prints, set with -X as `make build` does.
const cliPkg = "github.com/straitnet/strait/internal/cli"

// Build says what goes into the images.
type Build struct {
	// Module is the root of the strait repository (where go.mod is).
	Module string
	// Version is the images' tag and straitd's version ("dev", "v0.1.0").
	Version string
	// Revision is the git commit, "-dirty" appended for an uncommitted tree; empty means
	// "unknown".
	Revision string
	// Debian downloads strongSwan's packages for the charon image.
	Debian image.Debian
}

// charonPackages hold charon (strongswan-charon), the plugins Strait's strongswan.conf
// loads (nodeagent/cable/ipsec): kernel-netlink, socket-default and the crypto ones from
// libstrongswan and strongswan-libcharon, openssl and gcm from the standard plugins,
// kernel-libipsec from the extra plugins and vici from strongswan-swanctl.
func charonPackages() []string {
	return []string{"strongswan-charon", "strongswan-libcharon", "libstrongswan",
		"libstrongswan-standard-plugins", "libcharon-extra-plugins", "strongswan-swanctl"}
}

// tagPattern is what registries and containerd take as a tag (the OCI distribution spec).
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// revisionPattern keeps the revision one word of the linker's flags and a plain label.
var revisionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]*$`)

// Specs are Strait's two images: straitd alone, and straitd with charon. Both run
// /straitd, whose first argument picks the daemon (hub, agent, dns, charon), and share
// their base and straitd layers, so a node stores those once.
func Specs(ctx context.Context, b Build) ([]image.Spec, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	straitd, err := b.straitd(ctx)
	if err != nil {
		return nil, err
	}
	charon, err := b.Debian.Files(ctx, charonPackages())
	if err != nil {
		return nil, fmt.Errorf("charon's packages: %w", err)
	}
	if err := addPackageRecords(ctx, charon, b.Debian, charonPackages()); err != nil {
		return nil, fmt.Errorf("charon's packages: %w", err)
	}
	base := baseFiles()
	entry := []string{"/straitd"}
	return []image.Spec{{
		Ref: b.ref(StraitdRepo), Layers: []image.Files{base, straitd}, Entrypoint: entry,
		Labels:    b.labels("straitd", "Strait's daemons: hub, agent and dns (straitd hub|agent|dns)"),
		CreatedBy: "strait straitimage",
	}, {
		// straitd before charon's packages: the straitd image is then a prefix of this one,
		// and a node unpacks the shared layers once.
		Ref: b.ref(CharonRepo), Layers: []image.Files{base, straitd, charon}, Entrypoint: entry,
		Labels:    b.labels("strait charon", "strongSwan's charon for Strait's ipsec cable, run by straitd charon"),
		CreatedBy: "strait straitimage",
	}}, nil
}

func (b Build) check() error {
	if !tagPattern.MatchString(b.Version) {
		return fmt.Errorf("version %q: not an image tag (letters, digits, '_', '.', '-', at most 128, not starting with '.' or '-')", b.Version)
	}
	if b.Revision != "" && !revisionPattern.MatchString(b.Revision) {
		return fmt.Errorf("revision %q: want a commit like 0123abc or 0123abc-dirty (letters, digits, '_', '.', '-')", b.Revision)
	}
	return nil
}

func (b Build) ref(repo string) string { return repo + ":" + b.Version }

func (b Build) revision() string {
	if b.Revision == "" {
		return "unknown"
	}
	return b.Revision
}

// labels are the OCI annotations a registry, a scanner or `crane config` shows. No
// creation time: it would change the digest on every build.
func (b Build) labels(title, description string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.version":     b.Version,
		"org.opencontainers.image.revision":    b.revision(),
		"org.opencontainers.image.source":      Source,
	}
}

// straitd builds the static daemon binary into a layer holding /straitd. -trimpath, an
// empty build ID and no VCS stamp (the revision comes from the flag) make it the same
// bytes for the same sources, wherever the tree is.
func (b Build) straitd(ctx context.Context) (image.Files, error) {
	dir, err := os.MkdirTemp("", "strait-straitd-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "straitd")
	ldflags := strings.Join([]string{"-s", "-w", "-buildid=",
		"-X", cliPkg + ".version=" + b.Version, "-X", cliPkg + ".revision=" + b.revision()}, " ")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags,
		"-o", out, "./cmd/straitd")
	cmd.Dir = b.Module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/straitd: %w: %s", err, strings.TrimSpace(string(msg)))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	f := image.Files{}
	return f, f.Add(image.File("straitd", 0o755, data))
}

// addPackageRecords adds a dpkg status record for each package of pkgs' closure under
// var/lib/dpkg/status.d/, one file a package as distroless images keep them, so that
// image scanners see which Debian packages and versions the image holds.
func addPackageRecords(ctx context.Context, f image.Files, deb image.Debian, pkgs []string) error {
	closure, err := deb.Closure(ctx, pkgs)
	if err != nil {
		return err
	}
	debs, err := deb.Download(ctx, closure)
	if err != nil {
		return err
	}
	for i, path := range debs {
		control, err := exec.CommandContext(ctx, "dpkg-deb", "--field", path).Output()
		if err != nil {
			return fmt.Errorf("dpkg-deb --field %s: %w", filepath.Base(path), err)
		}
		pkgLine, rest, ok := strings.Cut(string(control), "\n")
		if !ok || !strings.HasPrefix(pkgLine, "Package: ") {
			return fmt.Errorf("dpkg-deb --field %s: no Package line first", filepath.Base(path))
		}
		record := pkgLine + "\nStatus: install ok installed\n" + rest
		if err := f.Add(image.File("var/lib/dpkg/status.d/"+closure[i], 0o644, []byte(record))); err != nil {
			return err
		}
	}
	return nil
}

// baseFiles is what both images have under their programs: root and the nonroot user
// (65532, which the hub and dns run as), name lookup from files then DNS, /tmp, and
// /run with /var/run pointing at it as on Debian (charon's pid file is
// /var/run/charon.pid). No CA certificates: straitd talks only to API servers, whose CA
// comes with the kubeconfig or the ServiceAccount.
func baseFiles() image.Files {
	f := image.Files{}
	for _, e := range []image.Entry{
		image.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n")),
		image.File("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		image.File("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\npasswd: files\ngroup: files\n")),
		{Path: "tmp", Type: tar.TypeDir, Mode: 0o1777},
		{Path: "root", Type: tar.TypeDir, Mode: 0o700},
		{Path: "run", Type: tar.TypeDir, Mode: 0o755},
		image.Symlink("var/run", "/run"),
	} {
		_ = f.Add(e) // static, valid paths
	}
	return f
}
