#!/usr/bin/env bash
# Runs the Multi-Cluster Services API conformance suite, every spec (Required and
# Optional), against a lab of two clusters (test/conformance), as a new user would: the
# suite's source copied from SUITE_DIR and built, its images loaded into the nodes, the
# first cluster exporting. The lab is taken under the shared lab lock and down again
# after, whatever happened. The report (report.yaml, report.html) goes to
# MCS_CONFORMANCE_REPORT (default docs/mcs-conformance/); the exit status is the suite's.
# With STRAIT_LAB_STATE naming the state directory of a running lab whose ClusterSet
# honours members' ServiceExports (exportPolicy: MemberExports), the suite runs there
# instead: no lock (whoever holds it runs this), no lab up or down. make test runs it so,
# in the lab test/e2e/mcsconformance's TestMain brings up (TestMCSConformance).
# STRAIT names the strait binary (default bin/strait). MCS_CONFORMANCE_BUILD_ONLY=1 only
# builds the suite and Ginkgo's runner (make test-binaries does, before any lab runs: the
# suite's own client-go and Ginkgo compiled from a cold cache took over 6 minutes of
# TestMCSConformance's time, a lab up beside them, on a 2-core machine), and then needs neither
# KUBECTL nor the images.
# Usage: hack/mcs-conformance.sh [SUITE_DIR]
# Without SUITE_DIR the suite is looked for in ../shared/third_party/mcs-api-conformance
# beside this checkout, then beside the repository it is a worktree of, then beside the
# local repository it was cloned from (a fresh clone anywhere finds the shared copy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rel=shared/third_party/mcs-api-conformance
src=${1:-}
if [ -z "$src" ]; then
  common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  origin=$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)
  origin=${origin#file://}
  origincommon=
  if [ -d "$origin" ]; then
    origincommon=$(git -C "$origin" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  fi
  for base in "$root" "${common:+$(dirname "$common")}" "$origin" "${origincommon:+$(dirname "$origincommon")}"; do
    if [ -n "$base" ] && [ -f "$base/../$rel/conformance_suite.go" ]; then
      src=$(cd "$base/../$rel" && pwd)
      break
    fi
  done
  if [ -z "$src" ]; then
    echo "mcs-conformance: no suite in ../$rel beside $root${common:+, $(dirname "$common")}${origin:+ or $origin}: set MCS_CONFORMANCE to its directory (see its UPSTREAM.md)" >&2
    # Nothing to build is not make test-binaries' failure: TestMCSConformance says so.
    [ -n "${MCS_CONFORMANCE_BUILD_ONLY:-}" ] && exit 0
    exit 1
  fi
  echo "mcs-conformance: the suite from $src"
fi
bin=$root/bin
work=$bin/mcs-conformance
strait=${STRAIT:-$bin/strait}
if [ ! -f "$src/conformance_suite.go" ]; then
  echo "mcs-conformance: $src holds no conformance suite (no conformance_suite.go); set MCS_CONFORMANCE to its directory" >&2
  exit 1
fi
if [ -z "${MCS_CONFORMANCE_BUILD_ONLY:-}" ]; then
  kubectl=${KUBECTL:?"KUBECTL: the kubectl to merge the clusters' kubeconfigs with"}
  for img in socat netshoot; do
    [ -f "$bin/images/$img.tar" ] || { echo "mcs-conformance: no $bin/images/$img.tar: run make images" >&2; exit 1; }
  done
fi

rm -rf "$work/src" && mkdir -p "$work/src"
cp -r "$src/." "$work/src/"
# The suite and Ginkgo's own runner, from the suite's module (its go.sum pins the runner):
# the runner spreads the specs over MCS_CONFORMANCE_PROCS processes. Each spec makes its
# services in a namespace of its own, and most of a spec's time is the suite's own waits
# (a connectivity check must pass 10 times a second apart): on a 2-core machine the 27
# specs took 200 s one at a time, 86-122 s three at once and 101 s six at once in the
# basic lab of make test (its daemons share the cores). On a machine where a fork and exec
# costs 2.2 ms and a syscall 1 us (2026-12-02, kernel 6.18 with pti=on), six at once left
# the specs' pods Pending past the suite's 60 s: 8 of 27 failed (351 s) in this script's
# own lab and 23 of 27 in make test's, while two at once passed 27 of 27 in 315 s in the
# same lab. Two: a pod's start is processes and syscalls, and six specs start theirs
# together. The report is one, of all of them.
procs=${MCS_CONFORMANCE_PROCS:-2}
# The suite's own time limit: past it Ginkgo stops the specs still running and still
# writes its report and summary, which a kill from outside would lose.
timeout=${MCS_CONFORMANCE_TIMEOUT:-60m}
(cd "$work/src" && go test -c -vet=off -o "$work/mcs-conformance.test" . && go build -o "$work/ginkgo" github.com/onsi/ginkgo/v2/ginkgo)
if [ -n "${MCS_CONFORMANCE_BUILD_ONLY:-}" ]; then
  echo "mcs-conformance: built $work/mcs-conformance.test and $work/ginkgo"
  exit 0
fi

if [ -n "${STRAIT_LAB_STATE:-}" ]; then
  echo "mcs-conformance: in the running lab at $STRAIT_LAB_STATE"
else
  exec 9>"${STRAIT_LAB_LOCK:-/run/strait-lab.lock}"
  flock 9
  trap '"$strait" lab down >/dev/null || echo "mcs-conformance: strait lab down failed" >&2' EXIT
  "$strait" lab up -f "$root/test/conformance/lab.yaml"
fi
"$strait" lab load-image "$bin/images/socat.tar" "$bin/images/netshoot.tar"
for c in c1 c2; do
  "$strait" lab kubeconfig "$c" >"$work/$c.kubeconfig"
done
KUBECONFIG="$work/c1.kubeconfig:$work/c2.kubeconfig" "$kubectl" config view --flatten >"$work/kubeconfig"

status=0
(cd "$work" && ./ginkgo --procs "$procs" -v --no-color --timeout "$timeout" ./mcs-conformance.test -- \
  -kubeconfig "$work/kubeconfig" -contexts strait-lab-c1,strait-lab-c2 \
  -organization Strait -project strait -version "$(git -C "$root" describe --always --dirty)") | tee "$work/run.log" || status=$?
report=${MCS_CONFORMANCE_REPORT:-$root/docs/mcs-conformance}
mkdir -p "$report"
cp "$work/report.yaml" "$work/report.html" "$report/"
exit "$status"
