#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_env_scan: every environment variable read in ref/ and harness/ (and the build's entry
# scripts) has a row in the pd_env table, as `pdkv-doctor --env --names` dumps it, every row is
# read somewhere, and product code reads them only through the pd_env API (a raw getenv() outside
# pd_env.c fails unless env_scan.py's WHITELIST names the file and variable); a list lacking a
# variable that code reads, and a stray getenv(), are caught.
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

# ... and a raw getenv() is caught: of a known variable, of one the whitelist allows elsewhere
# (PDKV_LOG in pd_log.c only), and through secure_getenv()
for call in 'getenv("MC_TRANSFER_TIMEOUT")' 'getenv("PDKV_LOG")' 'secure_getenv("TMPDIR")'; do
  printf '/* stray */\n#include <stdlib.h>\nconst char *stray(void)\n{\n\treturn %s;\n}\n' \
    "$call" >"$T/stray.c"
  if python3 ref/common/tests/env_scan.py "$T/names" --only "$T/stray.c" >"$T/out" 2>&1; then
    fail "the scan passed a stray $call"
  fi
  grep -q "stray.c:5: raw ${call%%(*}(" "$T/out" || { cat "$T/out"; fail "no line names the stray $call"; }
done
echo "test_env_scan: PASS"
