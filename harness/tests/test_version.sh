#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_version: every command pdkv installs answers --version (exit 0, one line: the name, the
# release, the commit built and the build's options), and lists it in --help where it has one.
set -u
BIN=${PDKV_BIN:-build/bin}
. "$(dirname "$0")/../../ci/testlib.sh"
n=0
for b in "$BIN"/pdkv*; do
	[ -x "$b" ] || continue
	n=$((n + 1))
	out=$(timeout 10 "$b" --version 2>&1); rc=$?
	check "$(basename "$b") --version exits 0 ($rc)" [ $rc = 0 ]
	check "$(basename "$b") --version: release, commit, build ('$out')" \
		bash -c "[[ '$out' =~ ^pdkv[-a-z\ ]*\ [0-9]+\.[0-9]+\ \(commit\ [0-9a-z.-]+\;\ build:\ .*RDMA.*CUDA ]]"
done
check "every command checked ($n)" [ $n -ge 12 ]
out=$("$BIN/pdkv" run --version); check "pdkv run --version is pdkv run's ('$out')" [ "${out#pdkv run 0.}" != "$out" ]
"$BIN/pdkv-run" --help | grep -q -- "--version"; check "pd_opt's --help lists --version" [ $? = 0 ]
[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all commands answer --version"
