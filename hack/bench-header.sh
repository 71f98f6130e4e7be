#!/usr/bin/env bash
# The head of a benchmark output kept under docs/bench/: the command, the commit (with
# "-dirty" when the run had uncommitted changes outside docs/bench/), the date, the cores and the memory, so
# that every figure the docs cite from it says which code on which machine made it.
#   hack/bench-header.sh 'make bench' > docs/bench/bench.txt
#   hack/bench-header.sh --md 'make bench' > docs/bench/bench-dns.md   (in a code block)
set -euo pipefail
cd "$(dirname "$0")/.."
md=false
if [[ ${1:-} == --md ]]; then
  md=true
  shift
fi
(($# == 1)) || { echo "usage: $0 [--md] COMMAND" >&2; exit 2; }
header() {
  echo "command: $1"
  # docs/bench/ does not count: the run is rewriting it.
  local dirty=""
  [[ -z $(git status --porcelain -- . ':!docs/bench') ]] || dirty="-dirty"
  echo "commit: $(git rev-parse HEAD)$dirty"
  echo "date: $(date -u +%FT%TZ)"
  echo "kernel: $(uname -r)"
  echo "nproc: $(nproc)"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "free -m:"
  free -m
}
if $md; then
  echo '```text'
  header "$1"
  echo '```'
  echo
else
  header "$1" | sed 's/^/# /'
fi
