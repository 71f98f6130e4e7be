#!/usr/bin/env bash
# The one set-up step of `make lab`, `make test` and .ci/run: the host tools the lab and
# the root tests run. Missing ones are installed from Debian's packages when this runs
# as root on Debian; otherwise (or with STRAIT_NO_INSTALL=1) it stops at once, naming
# every missing tool and the package that has it. It never waits on anything but apt.
set -euo pipefail

# tool-or-path:debian-package. A tool is looked up on PATH, a path must exist. gcc,
# pkg-config and libc6-dev link runc statically against libseccomp (make node-binaries);
# nsenter starts a real node's daemons in its namespaces; git (http-backend) is the lab's git
# server (lab/gitserver). iptables (iptables-nft) is kube-proxy's in iptables mode and the
# masquerade of the kindnet-like lab CNI.
needs=(
  ip:iproute2
  git:git
  nft:nftables
  iptables:iptables
  ping:iputils-ping
  iperf3:iperf3
  dnsperf:dnsperf
  shellcheck:shellcheck
  unshare:util-linux
  nsenter:util-linux
  pkg-config:pkg-config
  gcc:gcc
  /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev
  /usr/lib/ipsec/charon:strongswan-charon
  swanctl:strongswan-swanctl
  /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so:libcharon-extra-plugins
  /usr/lib/ipsec/plugins/libstrongswan-openssl.so:libstrongswan-standard-plugins
)

# missing prints "tool package" for every tool that is not there. bash's `command -v`
# also names a file it cannot execute, so the file it finds is checked too.
missing() {
  local entry tool path
  for entry in "${needs[@]}"; do
    tool=${entry%%:*}
    if [[ $tool == /* ]]; then
      [[ -f $tool ]] && continue
    elif path=$(command -v "$tool") && [[ -f $path && -x $path ]]; then
      continue
    fi
    echo "$tool ${entry#*:}"
  done
}

refuse() {
  echo "host-deps: $1" >&2
  while read -r tool pkg; do
    echo "  missing: $tool (Debian package $pkg)" >&2
  done <<<"$2"
  exit 1
}

if ! command -v go >/dev/null 2>&1; then
  echo "host-deps: go is not on PATH: install Go 1.26 or newer (for example in /usr/local/go) and add its bin/ to PATH" >&2
  exit 1
fi

# make node-binaries and make images fetch .deb files with apt-get download (nothing is
# installed from them): that needs the package lists, which a fresh machine may lack.
have_lists() { compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; }

gaps=$(missing)
if [[ -z $gaps ]] && have_lists; then
  echo "host-deps: every tool is there"
  exit 0
fi
if [[ -z $gaps ]]; then
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "host-deps: no Debian package lists (/var/lib/apt/lists), which 'make images' needs: run 'apt-get update' as root" >&2
    exit 1
  fi
  echo "host-deps: fetching Debian's package lists (apt-get update)"
  apt-get update -qq
  exit 0
fi
if [[ ${STRAIT_NO_INSTALL:-} == 1 ]]; then
  refuse "STRAIT_NO_INSTALL=1, so nothing is installed:" "$gaps"
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  refuse "cannot install (needs root on Debian); install these and run again:" "$gaps"
fi

mapfile -t pkgs < <(awk '{print $2}' <<<"$gaps" | sort -u)
echo "host-deps: installing ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
# An installed package needs no lists: try without refreshing them first.
if ! apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
gaps=$(missing)
if [[ -n $gaps ]]; then
  refuse "still missing after installing ${pkgs[*]} (hidden or removed by hand?):" "$gaps"
fi
echo "host-deps: installed ${pkgs[*]}"
