package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The lab's images.
const (
	Pause    = "strait-lab/pause:dev"
	Busybox  = "strait-lab/busybox:dev"
	Tools    = "strait-lab/tools:dev"
	Whereami = "strait-lab/whereami:dev"
	IPerf3   = "strait-lab/iperf3:dev"
)

// The images the Multi-Cluster Services API's conformance suite runs, under the names
// it asks for (make mcs-conformance loads them into a lab's nodes): its servers run sh
// and socat in the first, its client sh, nslookup (-type=SRV too), nc -4 -v -w, grep -E,
// awk and tr in the second. Built from Debian's packages like the lab's own images:
// socat is Debian's 1.7.4.4, the version the name says.
const (
	ConformanceSocat    = "alpine/socat:1.7.4.4"
	ConformanceNetshoot = "nicolaka/netshoot:v0.15"
)

// Sources say where the lab's images come from.
type Sources struct {
	// Module is the root of this repository (where go.mod is): pause and whereami are
	// built from it.
	Module string
	// Debian downloads the packages.
	Debian Debian
}

// Catalog is every image the lab's nodes run: the sandbox (pause), whereami, iperf3,
// busybox and the client's tools (busybox with curl, dig, iperf3 and socat). `make lab`
// builds these alone.
func Catalog(ctx context.Context, src Sources) ([]Spec, error) {
	pause, err := goProgram(ctx, src.Module, "./lab/image/pause", "pause")
	if err != nil {
		return nil, err
	}
	whereami, err := goProgram(ctx, src.Module, "./lab/workload/cmd/whereami", "whereami")
	if err != nil {
		return nil, err
	}
	busybox, err := BusyboxFiles(ctx, src.Debian)
	if err != nil {
		return nil, err
	}
	tools, err := src.Debian.Files(ctx, []string{"curl", "bind9-dnsutils", "iperf3", "socat"})
	if err != nil {
		return nil, err
	}
	iperf3, err := src.Debian.Files(ctx, []string{"iperf3"})
	if err != nil {
		return nil, err
	}
	base := BaseFiles()
	return []Spec{
		{Ref: Pause, Layers: []Files{pause}, Entrypoint: []string{"/pause"}},
		{Ref: Whereami, Layers: []Files{base, whereami}, Entrypoint: []string{"/whereami"}},
		{Ref: Busybox, Layers: []Files{base, busybox}, Cmd: []string{"sh"}},
		{Ref: Tools, Layers: []Files{base, busybox, tools}, Cmd: []string{"sh"}},
		{Ref: IPerf3, Layers: []Files{base, busybox, iperf3}, Entrypoint: []string{"iperf3", "-s"}},
	}, nil
}

// ConformanceCatalog is the MCS conformance suite's two images (make test and make
// mcs-conformance load them into a lab; make lab needs neither).
func ConformanceCatalog(ctx context.Context, src Sources) ([]Spec, error) {
	busybox, err := BusyboxFiles(ctx, src.Debian)
	if err != nil {
		return nil, err
	}
	socat, err := src.Debian.Files(ctx, []string{"socat"})
	if err != nil {
		return nil, err
	}
	netshoot, err := netshootFiles(ctx, src.Debian)
	if err != nil {
		return nil, err
	}
	base := BaseFiles()
	return []Spec{
		{Ref: ConformanceSocat, Layers: []Files{base, busybox, socat}, Entrypoint: []string{"socat"}},
		{Ref: ConformanceNetshoot, Layers: []Files{base, busybox, netshoot}, Cmd: []string{"sh"}},
	}, nil
}

// netshootFiles are the conformance suite's client tools over busybox: bind9's
// nslookup, whose SRV answers the suite parses, and OpenBSD's nc as nc (busybox's has
// no -4 or -v), the link Debian's alternatives would make; and dash as sh, since
// Debian's busybox shell runs its own applets (nc, nslookup) before any program on the
// PATH.
func netshootFiles(ctx context.Context, deb Debian) (Files, error) {
	f, err := deb.Files(ctx, []string{"bind9-dnsutils", "netcat-openbsd", "socat", "dash"})
	if err != nil {
		return nil, err
	}
	for _, l := range []struct{ name, program string }{{"nc", "nc.openbsd"}, {"sh", "dash"}} {
		var target string
		for _, p := range []string{"bin/" + l.program, "usr/bin/" + l.program} {
			if _, ok := f[p]; ok {
				target = "/" + p
			}
		}
		if target == "" {
			return nil, fmt.Errorf("no %s in netshoot's packages", l.program)
		}
		for _, p := range []string{"bin/" + l.name, "usr/bin/" + l.name} {
			delete(f, p)
			if err := f.Add(Symlink(p, target)); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// BaseFiles is what every image but pause has under its programs: root and nobody,
// name lookup from files then DNS, /tmp.
func BaseFiles() Files {
	f := Files{}
	for _, e := range []Entry{
		File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")),
		File("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")),
		File("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\npasswd: files\ngroup: files\n")),
		{Path: "tmp", Type: tar.TypeDir, Mode: 0o1777},
		{Path: "root", Type: tar.TypeDir, Mode: 0o700},
	} {
		_ = f.Add(e) // static, valid paths
	}
	return f
}

// BusyboxFiles is Debian's busybox-static with a symlink for each of its applets (sh,
// nslookup, wget, ...), the list asked from the binary itself.
func BusyboxFiles(ctx context.Context, deb Debian) (Files, error) {
	f, err := deb.Files(ctx, []string{"busybox-static"})
	if err != nil {
		return nil, err
	}
	bin, ok := f["bin/busybox"]
	if !ok {
		return nil, fmt.Errorf("busybox-static: no bin/busybox in the package")
	}
	applets, err := busyboxApplets(ctx, bin.Data)
	if err != nil {
		return nil, err
	}
	for _, a := range applets {
		if err := f.Add(Symlink(a, "/bin/busybox")); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func busyboxApplets(ctx context.Context, binary []byte) ([]string, error) {
	dir, err := os.MkdirTemp("", "strait-busybox-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "busybox")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		return nil, err
	}
	out, err := run(ctx, path, "--list-full")
	if err != nil {
		return nil, err
	}
	var applets []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if a := strings.TrimSpace(sc.Text()); a != "" && a != "bin/busybox" {
			applets = append(applets, a)
		}
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("busybox --list-full: no applets")
	}
	return applets, nil
}

// goProgram builds a static Go program of module (pkg relative to it) into a layer
// holding /<name>. -trimpath and an empty build ID make it the same bytes on every build.
func goProgram(ctx context.Context, module, pkg, name string) (Files, error) {
	dir, err := os.MkdirTemp("", "strait-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, pkg)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %w: %s", pkg, err, lastLines(msg, 10))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	f := Files{}
	return f, f.Add(File(name, 0o755, data))
}
