#!/usr/bin/env bash
# Build CoreDNS from the Go module proxy in a scratch module outside the repository, for
# the lab and the DNS benchmark, with the plugins they use. Nothing of it lands in the
# repository.
#   hack/build-coredns.sh [OUTPUT]      (default /tmp/coredns)
# Environment: COREDNS_VERSION (default v1.14.7), COREDNS_BUILD_DIR (default /tmp/coredns-build).
set -euo pipefail
out=${1:-/tmp/coredns}
version=${COREDNS_VERSION:-v1.14.7}
dir=${COREDNS_BUILD_DIR:-/tmp/coredns-build}
if [[ -x $out ]] && "$out" -version 2>/dev/null | grep -q "CoreDNS-${version#v}"; then
	echo "$out is CoreDNS ${version}"
	exit 0
fi
mkdir -p "$dir"
cd "$dir"
rm -f go.mod go.sum tools.go
go mod init corednsbuild >/dev/null 2>&1
# CoreDNS's own main links every plugin, the clouds' included (Route 53, Azure, Google
# Cloud DNS, etcd, Datadog's tracer): most of its build. This main links the plugins
# the lab's Corefiles, strait dns's block and the DNS benchmark use, and a few a person
# debugging the lab reaches for, as CoreDNS's docs build a custom one; their code is
# the release's own. With empty Go caches on a 2-core machine: 85 s and 101 modules
# (421 MB), against 140 s and 205 modules (1.6 GB) for CoreDNS's own main.
plugins=(any bind bufsize cache cancel chaos debug errors file forward health hosts
  kubernetes loadbalance local log loop metadata metrics minimal multisocket ready reload
  rewrite root template whoami)
{
	echo 'package main'
	echo
	echo 'import ('
	echo '	"github.com/coredns/coredns/coremain"'
	for p in "${plugins[@]}"; do echo "	_ \"github.com/coredns/coredns/plugin/$p\""; done
	echo ')'
	echo
	echo 'func main() { coremain.Run() }'
} > main.go
go mod edit -require="github.com/coredns/coredns@${version}"
go mod tidy
go build -o "$out" .
"$out" -version
have=$("$out" -plugins)
for p in kubernetes forward reload hosts file multisocket; do
	grep -qx "$p" <<<"$have" || { echo "build-coredns: $out has no $p plugin" >&2; exit 1; }
done
