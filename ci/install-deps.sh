#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian 12 package pdkv builds, tests and runs with. Idempotent: a second run
# installs nothing and takes about a second. Run as root (or with sudo available).
set -euo pipefail

PKGS=(
  build-essential pkg-config make gcc
  libcjson-dev libcurl4-openssl-dev libcmocka-dev
  libmicrohttpd-dev libhiredis-dev libzmq3-dev libmsgpack-dev
  libibverbs-dev rdma-core ibverbs-utils ibverbs-providers perftest iproute2
  etcd-server etcd-client redis-server redis-tools
  gnuplot-nox iperf3 curl procps psmisc
  qemu-system-x86 busybox-static
  clang-format clang-tidy clang libclang-rt-dev
  help2man man-db dpkg-dev debhelper openssh-server openssh-client nftables iputils-ping
  python3
  prometheus libxml2-utils lintian
  slurmctld slurmd munge slurm-client
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts these daemons on install where an init system runs; pdkv starts its own on free
# ports (and its test sshd inside namespaces), so stop the packaged ones to keep 2379/6379/22/9090
# free (ignore failures: no init in containers). prometheus is here for promtool (the /metrics
# check), libxml2-utils for xmllint (the JUnit schema check), lintian for the .deb. slurm* and
# munge: the Slurm launcher's test starts its own (own slurm.conf, key and ports in a temp dir).
for s in etcd redis-server ssh prometheus slurmctld slurmd munge; do
  $SUDO systemctl disable --now "$s" >/dev/null 2>&1 || true
done
echo "install-deps: done"
