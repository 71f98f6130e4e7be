#!/usr/bin/env bash
# Runs the Multi-Cluster Services API conformance suite, every spec (Required and
# Optional), against a lab of two clusters (test/conformance), as a new user would: the
# suite's source copied from SUITE_DIR and built, its images loaded into the nodes, the
# first cluster exporting. The lab is taken under the shared lab lock and down again
# after, whatever happened. The report (report.yaml, report.html) goes to
# MCS_CONFORMANCE_REPORT (default docs/mcs-conformance/); the exit status is the suite's.
# Usage: hack/mcs-conformance.sh SUITE_DIR
set -euo pipefail
src=${1:?"usage: hack/mcs-conformance.sh SUITE_DIR (MCS_CONFORMANCE: the suite's source, see its UPSTREAM.md)"}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin
work=$bin/mcs-conformance
strait=$bin/strait
kubectl=${KUBECTL:?"KUBECTL: the kubectl to merge the clusters' kubeconfigs with"}
if [ ! -f "$src/conformance_suite.go" ]; then
  echo "mcs-conformance: $src holds no conformance suite (no conformance_suite.go); set MCS_CONFORMANCE to its directory" >&2
  exit 1
fi
for img in socat netshoot; do
  [ -f "$bin/images/$img.tar" ] || { echo "mcs-conformance: no $bin/images/$img.tar: run make images" >&2; exit 1; }
done

rm -rf "$work/src" && mkdir -p "$work/src"
cp -r "$src/." "$work/src/"
(cd "$work/src" && go test -c -o "$work/mcs-conformance.test" .)

exec 9>"${STRAIT_LAB_LOCK:-/run/strait-lab.lock}"
flock 9
trap '"$strait" lab down >/dev/null || echo "mcs-conformance: strait lab down failed" >&2' EXIT
"$strait" lab up -f "$root/test/conformance/lab.yaml"
"$strait" lab load-image "$bin/images/socat.tar" "$bin/images/netshoot.tar"
for c in c1 c2; do
  "$strait" lab kubeconfig "$c" >"$work/$c.kubeconfig"
done
KUBECONFIG="$work/c1.kubeconfig:$work/c2.kubeconfig" "$kubectl" config view --flatten >"$work/kubeconfig"

status=0
(cd "$work" && ./mcs-conformance.test -kubeconfig "$work/kubeconfig" -contexts strait-lab-c1,strait-lab-c2 \
  -organization Strait -project strait -version "$(git -C "$root" describe --always --dirty)" \
  -ginkgo.v -ginkgo.no-color -test.timeout 60m) | tee "$work/run.log" || status=$?
report=${MCS_CONFORMANCE_REPORT:-$root/docs/mcs-conformance}
mkdir -p "$report"
cp "$work/report.yaml" "$work/report.html" "$report/"
exit "$status"
