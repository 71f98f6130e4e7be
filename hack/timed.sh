#!/usr/bin/env bash
# Usage: hack/timed.sh NAME CMD [ARG...]
# Runs CMD and appends "NAME<TAB>seconds<TAB>exit status" to $STRAIT_TIMES (default
# bin/times.tsv), whatever CMD's exit, which it returns. A timed.sh inside CMD (make test
# called from .ci/run) names its steps under this one ("make test > e2e labs"), so the table
# of hack/steptimes nests them. The file is the budget's record: `go run ./hack/steptimes
# table` prints it.
set -uo pipefail
if (($# < 2)); then
  echo "usage: hack/timed.sh NAME CMD [ARG...]" >&2
  exit 2
fi
name="${STRAIT_STEP:+$STRAIT_STEP > }$1"
shift
times="${STRAIT_TIMES:-$(cd "$(dirname "$0")/.." && pwd)/bin/times.tsv}"
mkdir -p "$(dirname "$times")"
start=$EPOCHREALTIME
STRAIT_STEP="$name" STRAIT_TIMES="$times" "$@"
rc=$?
end=$EPOCHREALTIME
printf '%s\t%s\t%d\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$rc" >>"$times"
exit "$rc"
