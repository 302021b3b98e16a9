#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every pdkv test program ($BUILD/tests/*) and test script (*/tests/*.sh), each with a
# time limit, one line per test; a failing test's log tail is printed. Exit 77 from a test is
# SKIP (capability missing). Last line: "tests: N passed, N failed, N skipped".
# Usage: ci/run-tests.sh [NAME-SUBSTRING]
set -u
BUILD=${BUILD:-build}
FILTER=${1:-}
LIMIT=${PDKV_TEST_TIMEOUT:-600}
LOGDIR=$BUILD/test-logs
mkdir -p "$LOGDIR"
export PDKV_BIN=${PDKV_BIN:-$(cd "$BUILD/bin" && pwd)}
export PATH="$PDKV_BIN:$PATH"
. "$(dirname "$0")/python-path.sh" # python3 without its pyenv shim (0.37 s a call)

tests=()
for t in "$BUILD"/tests/*; do [ -x "$t" ] && tests+=("$t"); done
while IFS= read -r s; do tests+=("$s"); done < <(ls ref/*/tests/*.sh harness/tests/*.sh harness/*/tests/*.sh 2>/dev/null | sort)

pass=0 fail=0 skip=0 failed=()
start_all=$(date +%s.%N)
for t in "${tests[@]}"; do
  name=$(basename "$t")
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  log="$LOGDIR/$name.log"
  t0=$(date +%s.%N)
  if [[ "$t" == *.sh ]]; then
    timeout -k 10 "$LIMIT" bash "$t" >"$log" 2>&1 </dev/null; rc=$?
  else
    timeout -k 10 "$LIMIT" "$t" >"$log" 2>&1 </dev/null; rc=$?
  fi
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  case $rc in
    0)  pass=$((pass+1)); printf '%-50s %6s %7ss\n' "$name" PASS "$secs" ;;
    77) skip=$((skip+1)); printf '%-50s %6s %7ss  (%s)\n' "$name" SKIP "$secs" "$(grep -m1 -i 'skip\|notrun' "$log" | cut -c1-80)" ;;
    *)  fail=$((fail+1)); failed+=("$name")
        [ $rc -eq 124 ] && why="timed out after ${LIMIT}s" || why="exit $rc"
        printf '%-50s %6s %7ss  (%s; log %s)\n' "$name" FAIL "$secs" "$why" "$log"
        tail -n 25 "$log" | sed 's/^/    | /' ;;
  esac
done
total=$(awk -v a="$start_all" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "wall time: ${total}s"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
