#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pkg.sh: `make install` and `make deb` — lays out pdkv's binaries, scenarios, fixtures, docs and
# one man page per command (help2man over each --help) under DESTDIR/PREFIX; `deb` builds the
# package with dpkg-buildpackage from harness/install/debian/.
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

# A man page from the command's --help (help2man), with EXIT STATUS, FILES, SEE ALSO
# (man/common.h2m), the command's EXAMPLES (man/<command>.h2m) and ENVIRONMENT generated from
# the pd_env table (pdkv-doctor --env --man=<command>); without help2man a plain page.
man_page() {
  local bin=$1 out=$2 name desc inc
  name=$(basename "$bin")
  desc=${WHAT[$name]:-pdkv command}
  inc=$(mktemp)
  {
    cat harness/install/man/common.h2m
    [ -f "harness/install/man/$name.h2m" ] && { echo; cat "harness/install/man/$name.h2m"; }
    if [ -x "$BUILD/bin/pdkv-doctor" ] && [ -n "$("$BUILD/bin/pdkv-doctor" --env --man="$name")" ]; then
      printf '\n[ENVIRONMENT]\n'
      "$BUILD/bin/pdkv-doctor" --env --man="$name"
    fi
  } >"$inc"
  if command -v help2man >/dev/null; then
    help2man --no-info --no-discard-stderr --section=1 --version-string="$VERSION" \
      --source=pdkv --manual="pdkv manual" -n "$desc" -N -i "$inc" "$bin" >"$out" ||
      { rm -f "$inc"; die "help2man failed on $bin"; }
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
  rm -f "$inc"
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

# Debian's own tooling: a staging copy of the tree with harness/install/debian/ as debian/,
# dpkg-buildpackage -b (debhelper: build, install, strip into -dbgsym, shlibdeps, compress man
# pages), then lintian on the result. The packages land in $BUILD/.
do_deb() {
  local src stage abs out
  command -v dpkg-buildpackage >/dev/null || die "dpkg-buildpackage not found (apt-get install dpkg-dev)"
  command -v dh >/dev/null || die "dh not found (apt-get install debhelper)"
  abs=$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)
  stage=$abs/debsrc
  src=$stage/pdkv-$VERSION
  rm -rf "$stage" "$abs"/pdkv_*.deb "$abs"/pdkv-dbgsym_*.deb "$abs"/pdkv_*.changes "$abs"/pdkv_*.buildinfo
  mkdir -p "$src"
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | grep -zv '^build' |
      xargs -0 cp --parents -t "$src"
  else
    tar --exclude='./build*' -cf - . | tar -xf - -C "$src"
  fi
  cp -r harness/install/debian "$src/debian"
  (cd "$src" && dpkg-buildpackage -b -us -uc -j"${DEB_JOBS:-2}") >"$stage/build.log" 2>&1 ||
    { tail -30 "$stage/build.log"; die "dpkg-buildpackage failed (log $stage/build.log)"; }
  for out in "$stage"/*.deb "$stage"/*.changes "$stage"/*.buildinfo; do
    mv "$out" "$abs/"
  done
  echo "pkg.sh: built $(cd "$abs" && ls pdkv_*.deb pdkv-dbgsym_*.deb 2>/dev/null | tr '\n' ' ')"
}

case ${1:-} in
  install) do_install ;;
  deb) do_deb ;;
  *) echo "usage: pkg.sh install|deb" >&2; exit 2 ;;
esac
