#!/usr/bin/env bash
# Benchmark strait dns against CoreDNS with dnsperf, on loopback, in one run.
#   hack/dns-bench.sh [dnsbench flags, e.g. -services 10000 -seconds 15 -rounds 2]
# Needs: dnsperf (Debian package dnsperf), the envtest binaries (make k8s-binaries),
# and builds bin/straitd and CoreDNS (hack/build-coredns.sh) first.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v dnsperf >/dev/null || { echo "dnsperf missing: apt-get install -y dnsperf" >&2; exit 1; }
coredns=${COREDNS:-/tmp/coredns}
hack/build-coredns.sh "$coredns" >&2
go build -o bin/straitd ./cmd/straitd
go build -o bin/dnsbench ./hack/dnsbench
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores; strait $(git rev-parse --short HEAD), $("$coredns" -version | head -1), dnsperf $(dpkg-query -W -f '${Version}' dnsperf 2>/dev/null || echo "?")"
bin/dnsbench -straitd bin/straitd -coredns "$coredns" "$@"
