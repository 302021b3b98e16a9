#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_doctor_env: `pdkv doctor --env` lists every table row with its source (set/default),
# hides secrets, marks a bad value and exits 1 for it; --man=COMMAND gives that command's rows.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. ci/testlib.sh
BUILD=${BUILD:-build}
D=$BUILD/bin/pdkv-doctor
T=$(mktemp -d /tmp/pdkv-doctor-env.XXXXXX)
trap 'rm -rf "$T"' EXIT

env -u MC_TRANSFER_TIMEOUT MC_REDIS_PASSWORD=s3cret PDKV_TCP_SPIN_US=20 "$D" --env >"$T/ok"
check "exit 0 with good values" [ $? -eq 0 ]
n=$("$D" --env --names | wc -l)
check "one line per row ($n)" [ "$(grep -c -E '^[A-Z][A-Z0-9_]+ +(set|default) ' "$T/ok")" -eq "$n" ]
check "a default row" grep -qE '^MC_TRANSFER_TIMEOUT +default +30$' "$T/ok"
check "a set row" grep -qE '^PDKV_TCP_SPIN_US +set +20$' "$T/ok"
check "a secret is hidden" grep -qE '^MC_REDIS_PASSWORD +set +\(hidden\)$' "$T/ok"
check "the secret never shows" bash -c "! grep -q s3cret '$T/ok'"

MC_TRANSFER_TIMEOUT=9999999999 "$D" --env >"$T/bad"
check "exit 1 with a bad value" [ $? -eq 1 ]
check "the bad value is marked with the range" \
  grep -qE '^MC_TRANSFER_TIMEOUT +set +"9999999999" +BAD: expected an integer 5\.\.86400' "$T/bad"
check "the count line" grep -q '1 bad$' "$T/bad"

"$D" --env --man=pdkv-standin >"$T/man"
check "--man: standin reads MC_TRANSFER_TIMEOUT" grep -qx '.B MC_TRANSFER_TIMEOUT' "$T/man"
check "--man: standin does not read OPENAI_API_KEY" bash -c "! grep -q OPENAI_API_KEY '$T/man'"
"$D" --env --man=proxy | grep -qx '.B OPENAI_API_KEY'
check "--man=proxy has OPENAI_API_KEY" [ $? -eq 0 ]
"$D" --env --man=nope 2>/dev/null
check "--man of an unknown command exits 2" [ $? -eq 2 ]
"$D" --env --bogus 2>/dev/null
check "a bad flag exits 2" [ $? -eq 2 ]
"$D" --env --markdown >"$T/env.md"
check "docs/environment.md is current (pdkv doctor --env --markdown >docs/environment.md)" \
  cmp -s "$T/env.md" docs/environment.md
[ "$fails" -eq 0 ] && echo "test_doctor_env: PASS"
exit "$fails"
