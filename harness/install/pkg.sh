#!/usr/bin/env bash
# pkg.sh: `make install` and `make deb` — lays out pdkv's binaries, scenarios, fixtures, docs and
# one man page per command (help2man over each --help) under DESTDIR/PREFIX, then packs a .deb.
# Usage: pkg.sh install | deb     (BUILD, PREFIX, DESTDIR, VERSION from the environment)
set -euo pipefail

BUILD=${BUILD:-build}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
VERSION=${VERSION:-0.1}
DEB_REVISION=${DEB_REVISION:-1}
GZIP_MAN=${GZIP_MAN:-0}

die() { echo "pkg.sh: $*" >&2; exit 1; }

# One line per command for the man page's NAME section (same words as `pdkv --help`).
declare -A WHAT=(
  [pdkv]="conformance and benchmark kit for vLLM P/D KV-cache transfer over Mooncake"
  [pdkv-run]="run P/D scenarios and report PASS/FAIL/NOTRUN"
  [pdkv-config]="check a mooncake.json and --kv-transfer-config as vLLM would"
  [pdkv-ports]="list every port a P/D deployment binds and report collisions"
  [pdkv-bench]="transfer-engine bandwidth benchmark (transfer_engine_bench flags)"
  [pdkv-report]="compare two runs with statistics and plot a history"
  [pdkv-doctor]="check a host for RDMA devices, GIDs, MTU, memlock, metadata reachability"
  [pdkv-standin]="OpenAI-compatible Prefill/Decode stand-in for vLLM"
  [pdkv-proxy]="disaggregation proxy: prefill with max_tokens=1, then decode"
  [pdkv-metaserver]="HTTP metadata server with Mooncake's API"
  [pdkv-bootstrap]="vLLM gen B bootstrap server, for prefills given bootstrap_server_address"
  [pdkv-upgrade-check]="rolling-upgrade matrix of two vLLM releases, old/new prefill x old/new decode"
  [pdkv-vllm-drift]="read an installed vLLM and say what pdkv does not model yet"
)

bins() {
  local b
  for b in "$BUILD"/bin/pdkv "$BUILD"/bin/pdkv-*; do
    [ -x "$b" ] && [ -f "$b" ] && echo "$b"
  done
}

# A man page from the command's --help; help2man when installed, else a plain page that
# carries the same text verbatim (still readable with man(1)).
man_page() {
  local bin=$1 out=$2 name desc
  name=$(basename "$bin")
  desc=${WHAT[$name]:-pdkv command}
  if command -v help2man >/dev/null; then
    help2man --no-info --no-discard-stderr --section=1 --version-string="$VERSION" \
      --source=pdkv --manual="pdkv manual" -n "$desc" -N "$bin" >"$out" ||
      die "help2man failed on $bin"
  else
    {
      echo ".TH ${name^^} 1 \"\" \"pdkv $VERSION\" \"pdkv manual\""
      echo ".SH NAME"
      echo "$name \\- $desc"
      echo ".SH DESCRIPTION"
      echo ".nf"
      "$bin" --help 2>&1 | sed 's/\\/\\\\/g; s/^\./\\\&./'
      echo ".fi"
    } >"$out"
  fi
}

do_install() {
  local root="$DESTDIR$PREFIX" b n
  local share="$root/share/pdkv" doc="$root/share/doc/pdkv" man="$root/share/man/man1"
  [ -n "$(bins)" ] || die "no binaries in $BUILD/bin (run make first)"
  install -d "$root/bin" "$share" "$doc" "$man"
  for b in $(bins); do
    install -m 0755 "$b" "$root/bin/"
    n=$(basename "$b")
    man_page "$b" "$man/$n.1"
    if [ "$GZIP_MAN" = 1 ]; then gzip -9nf "$man/$n.1"; fi
  done
  # pdkv vllm-drift's extractor (cfg_drift_extractor looks in ../share/pdkv/)
  install -m 0644 harness/drift/vllm_extract.py "$share/"
  # scenarios keep their layout: fixture paths inside them are relative to the file
  rm -rf "$share/scenarios" "$share/fixtures"
  git ls-files -z scenarios fixtures 2>/dev/null | while IFS= read -r -d '' f; do
    install -D -m 0644 "$f" "$share/$f"
  done
  [ -f "$share/scenarios/README.md" ] || cp -r scenarios fixtures "$share/" # not a git tree
  install -m 0644 README.md "$doc/"
  for f in docs/*.md ref/*/README.md harness/*/README.md; do
    [ -f "$f" ] || continue
    install -D -m 0644 "$f" "$doc/$f"
  done
  echo "pkg.sh: installed $(bins | wc -l) commands under $root"
}

# Debian's own tools: dpkg-shlibdeps for the library Depends, dpkg-deb to build.
do_deb() {
  local arch stage src deps size out
  command -v dpkg-deb >/dev/null || die "dpkg-deb not found (apt-get install dpkg)"
  command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps not found (apt-get install dpkg-dev)"
  arch=$(dpkg --print-architecture)
  stage=$BUILD/deb/root
  src=$BUILD/deb/src
  rm -rf "$BUILD/deb"
  DESTDIR=$stage PREFIX=/usr GZIP_MAN=1 do_install >/dev/null
  mkdir -p "$src/debian" "$stage/DEBIAN"
  printf 'Source: pdkv\n\nPackage: pdkv\nArchitecture: any\n' >"$src/debian/control"
  local abs_stage
  abs_stage=$(cd "$stage" && pwd)
  deps=$(cd "$src" && dpkg-shlibdeps -O "$abs_stage"/usr/bin/* 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
  [ -n "$deps" ] || die "dpkg-shlibdeps found no dependencies"
  size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
  cat >"$stage/DEBIAN/control" <<EOF
Package: pdkv
Version: $VERSION-$DEB_REVISION
Architecture: $arch
Maintainer: pdkv developers <pdkv@localhost>
Installed-Size: $size
Depends: $deps
Recommends: etcd-server, redis-server, openssh-client, iproute2
Suggests: rdma-core, ibverbs-providers, perftest, nftables, openssh-server, gnuplot-nox
Section: devel
Priority: optional
Description: conformance and benchmark kit for vLLM P/D KV-cache transfer
 pdkv checks a vLLM Prefill/Decode deployment's KV-cache transfer over the
 Mooncake transfer engine: scenario runner (pdkv run), config checker,
 port planner, transfer-engine benchmark, host doctor, and reference
 stand-ins, proxy and metadata server to run the scenarios without GPUs.
EOF
  install -d "$stage/usr/share/doc/pdkv"
  printf 'pdkv %s\n\nSee /usr/share/doc/pdkv/README.md.\n' "$VERSION" \
    >"$stage/usr/share/doc/pdkv/copyright"
  out=$BUILD/pdkv_${VERSION}-${DEB_REVISION}_${arch}.deb
  dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
  echo "pkg.sh: built $out (Depends: $deps)"
}

case ${1:-} in
  install) do_install ;;
  deb) do_deb ;;
  *) echo "usage: pkg.sh install|deb" >&2; exit 2 ;;
esac
