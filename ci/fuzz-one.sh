#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz-one: one libFuzzer target of make fuzz (built into build-fuzz/fuzz/) for SECONDS on its
# corpus build-fuzz/corpus/TARGET plus fixtures/fuzz/TARGET/seeds and regress; prints its
# stats in one piece (make fuzz runs FUZZ_JOBS of these at once); exit 1 on a crash, the input
# in build-fuzz/crash/TARGET/.
# Usage: ci/fuzz-one.sh TARGET SECONDS
set -u
f=$1 secs=$2
cd "$(dirname "$0")/.."
mkdir -p "build-fuzz/corpus/$f" "build-fuzz/crash/$f"
log=build-fuzz/crash/$f.log
# shellcheck disable=SC2046 # the seed folders that exist, as separate arguments
"build-fuzz/fuzz/$f" -max_total_time="$secs" -print_final_stats=1 \
  -artifact_prefix="build-fuzz/crash/$f/" "build-fuzz/corpus/$f" \
  $(ls -d "fixtures/fuzz/$f/seeds" "fixtures/fuzz/$f/regress" 2>/dev/null) >"$log" 2>&1
out="fuzz: $f for $secs s
$(grep -E "^stat::(number_of_executed_units|average_exec_per_sec)|==ERROR|SUMMARY|^Done" "$log")"
if ls "build-fuzz/crash/$f"/* >/dev/null 2>&1; then
  out+="
$(grep -E "^ +#[0-9]+ .* in |^MS:|^Base64:|^artifact" "$log" |
    grep -v -E " in (fuzzer::|__sanitizer|__libc|_start|main )" | head -30)
fuzz: $f CRASHED (log $log)"
  echo "$out"
  exit 1
fi
echo "$out"
