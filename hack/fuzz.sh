#!/usr/bin/env bash
# make fuzz: runs every Go fuzz target of the repository (each `func FuzzX(f *testing.F)` in
# a tracked _test.go file, in whatever module holds it) for FUZZTIME each (default 30s).
# `go test` replays a package's testdata/fuzz/FuzzX/ as seeds on every run; a failing input
# the fuzzer finds is written there, so this script then names the file to commit with its
# fix, and exits non-zero. (Inputs that only add coverage stay in the Go build cache.)
#
# FUZZMINIMIZETIME (default 5s) bounds the minimization of each input that adds coverage:
# Go's default of 60s spent nearly all of a 30s run minimizing the first such input of
# the plan fuzzer (about 300 inputs tried instead of 36,000).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
minimizetime="${FUZZMINIMIZETIME:-5s}"
go="${GO:-go}"

# file:line:func FuzzName(f *testing.F) {
mapfile -t targets < <(git grep -nE '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go')
if ((${#targets[@]} == 0)); then
  echo "no fuzz targets (func FuzzX(f *testing.F)) in any tracked _test.go file" >&2
  exit 1
fi
failed=()
for t in "${targets[@]}"; do
  file="${t%%:*}"
  dir="$(dirname "$file")"
  name="${t#*:*:func }"
  name="${name%%(*}"
  echo "== $dir: $name for $fuzztime"
  before="$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)"
  out="$(mktemp)"
  if (cd "$dir" && "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" .) 2>&1 | tee "$out"; then
    rm -f "$out"
    continue
  fi
  after="$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)"
  if [[ "$after" != "$before" ]]; then
    echo "-- the input that fails, to commit with the fix (go test replays it from then on):"
    comm -13 <(echo "$before") <(echo "$after") | sed 's/^?? /   /'
  elif grep -qx '    context deadline exceeded' "$out" && (cd "$dir" && "$go" test -count=1 -run "^${name}\$" .); then
    # Go's fuzzing coordinator can miss its own -fuzztime deadline under load and fail
    # with a bare "context deadline exceeded": no input written, nothing to replay. Told
    # apart from a finding by the replay of every seed just above; said, not hidden.
    echo "-- $name: the fuzzing coordinator's own deadline at the end of -fuzztime, no input found; seeds replayed: pass"
    rm -f "$out"
    continue
  fi
  rm -f "$out"
  failed+=("$dir $name")
done
if ((${#failed[@]})); then
  echo "fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzed ${#targets[@]} target(s) for $fuzztime each: nothing found"
