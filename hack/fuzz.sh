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
#
# Go's fuzzing coordinator can miss its own -fuzztime deadline under load and fail with
# a bare "context deadline exceeded": no input written, nothing to replay, and nothing
# fuzzed for the rest of that target's time. Such a target is fuzzed once more, said,
# and passes only if that run passes; a second miss fails it, naming the target, so a
# machine too loaded to fuzz is not taken for a fuzzed one.
#
# GO is the go command (default go); hack/fuzzsh's test puts a fake one there.
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

# fuzz DIR NAME OUT: one fuzzing run of a target, its output also in OUT.
fuzz() {
  (cd "$1" && "$go" test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" .) 2>&1 | tee "$3"
}

# missed OUT: the run ended on the coordinator's own deadline, not on a finding.
missed() {
  grep -qx '    context deadline exceeded' "$1"
}

for t in "${targets[@]}"; do
  file="${t%%:*}"
  dir="$(dirname "$file")"
  name="${t#*:*:func }"
  name="${name%%(*}"
  echo "== $dir: $name for $fuzztime"
  before="$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)"
  out="$(mktemp)"
  ok=false
  if fuzz "$dir" "$name" "$out"; then
    ok=true
  elif [[ "$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)" == "$before" ]] && missed "$out"; then
    echo "-- $dir $name: the fuzzing coordinator missed its -fuzztime deadline, no input found; fuzzing it once more"
    if fuzz "$dir" "$name" "$out"; then
      echo "-- $dir $name: reran after the coordinator missed its deadline: pass"
      ok=true
    elif [[ "$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)" == "$before" ]] && missed "$out"; then
      echo "-- $dir $name: the fuzzing coordinator missed its -fuzztime deadline twice; the target was not fuzzed for $fuzztime" >&2
    fi
  fi
  rm -f "$out"
  if $ok; then
    continue
  fi
  after="$(git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz" 2>/dev/null)"
  if [[ "$after" != "$before" ]]; then
    echo "-- the input that fails, to commit with the fix (go test replays it from then on):"
    comm -13 <(echo "$before") <(echo "$after") | sed 's/^?? /   /'
  fi
  failed+=("$dir $name")
done
if ((${#failed[@]})); then
  echo "fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzed ${#targets[@]} target(s) for $fuzztime each: nothing found"
