#!/usr/bin/env bash
# Build CoreDNS from the Go module proxy in a scratch module outside the repository, for
# the DNS benchmark. Nothing of it lands in the repository.
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
[[ -f go.mod ]] || go mod init corednsbuild >/dev/null 2>&1
cat > tools.go <<'GO'
//go:build tools

package tools

import _ "github.com/coredns/coredns"
GO
go get "github.com/coredns/coredns@${version}"
go build -o "$out" github.com/coredns/coredns
"$out" -version
