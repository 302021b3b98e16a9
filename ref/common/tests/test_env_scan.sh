#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_env_scan: every environment variable read in ref/ and harness/ (and the build's entry
# scripts) has a row in the pd_env table, as `pdkv-doctor --env --names` dumps it, and every row
# is read somewhere; a list lacking a variable that code reads is caught.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. ci/testlib.sh
BUILD=${BUILD:-build}
T=$(mktemp -d /tmp/pdkv-env-scan.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BUILD/bin/pdkv-doctor" --env --names >"$T/names" || fail "pdkv-doctor --env --names"
[ "$(wc -l <"$T/names")" -gt 60 ] || fail "the table dump has $(wc -l <"$T/names") names"
python3 ref/common/tests/env_scan.py "$T/names" || fail "variables read without a row (above)"

# the scan itself can fail: drop one row that four readers use
grep -v '^MC_TRANSFER_TIMEOUT$' "$T/names" >"$T/less"
if python3 ref/common/tests/env_scan.py "$T/less" >"$T/out" 2>&1; then
  fail "the scan passed a table without MC_TRANSFER_TIMEOUT"
fi
grep -q "MC_TRANSFER_TIMEOUT is read but has no row" "$T/out" || { cat "$T/out"; fail "no line names it"; }
echo "test_env_scan: PASS"
