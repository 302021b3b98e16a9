#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_interop: the interop tier's paths that need no Mooncake — no bench anywhere -> NOTRUN
# (77) with the reason, in text and --json; a bench that is not executable -> NOTRUN; usage -> 2.
set -u
BIN=${PDKV_BIN:-build/bin}
T=$(mktemp -d /tmp/pdkv-test-interop.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && tail -20 "$T/out"; exit 1; }
[ -x "$BIN/pdkv-interop" ] || { echo "SKIP: $BIN/pdkv-interop not built"; exit 77; }

# no Mooncake: PATH without a transfer_engine_bench, MOONCAKE_BENCH unset
env -u MOONCAKE_BENCH PATH=/usr/bin:/bin "$BIN/pdkv" interop --json "$T/j" >"$T/out" 2>&1
rc=$?
[ $rc -eq 77 ] || fail "no Mooncake: want exit 77, got $rc"
grep -q "NOTRUN: no Mooncake transfer_engine_bench" "$T/out" || fail "no Mooncake: reason missing"
grep -q "MOONCAKE_BENCH" "$T/out" || fail "no Mooncake: the message does not say how to give one"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"]=="NOTRUN" and d["why"]' "$T/j" ||
  fail "--json of the NOTRUN path is not the expected JSON"

# MOONCAKE_BENCH naming something that is not a program
touch "$T/notexec"
MOONCAKE_BENCH="$T/notexec" "$BIN/pdkv-interop" >"$T/out" 2>&1
rc=$?
[ $rc -eq 77 ] || fail "non-executable bench: want 77, got $rc"
grep -q "not an executable" "$T/out" || fail "non-executable bench: no reason"

# usage
"$BIN/pdkv-interop" --bogus >"$T/out" 2>&1; [ $? -eq 2 ] || fail "unknown flag: want 2"
"$BIN/pdkv-interop" --protocol udp --mooncake-bench /bin/true >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --protocol: want 2"
grep -q -- "--protocol" "$T/out" || fail "bad --protocol: message does not name the flag"
echo "ok: interop NOTRUN paths and usage"
