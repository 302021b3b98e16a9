#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv upgrade-check end to end: a same-generation upgrade (gen-B shapes) and a gen A -> gen B
# one (mixed cells INCOMPATIBLE with the error seen, both contracts), exit codes, the JSON and
# JUnit files, bounded time, and bad input (exit 2 naming the flag).
set -u
cd "$(dirname "$0")/../../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-upgrade-check" ] && [ -x "$BIN/pdkv-standin" ] || { echo "SKIP: binaries not built"; exit 77; }
# shellcheck source=ci/testlib.sh
. ci/testlib.sh
T=$(mktemp -d /tmp/pdkv-upg-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
run() { "$BIN/pdkv" upgrade-check "$@" >"$T/out" 2>"$T/err"; echo $?; }
# jq-free JSON assertions: python3 -c EXPR with j = the document
jq_() { python3 -c "import json,sys; j=json.load(open('$1')); sys.exit(0 if ($2) else 1)"; }

# usage and bad input: exit 2 with a message naming the flag
check "--help exits 0" [ "$(run --help)" = 0 ]
check "--help lists --from" grep -q -- '--from X.Y' "$T/out"
check "missing --to exits 2" [ "$(run --from 0.16)" = 2 ]
check "missing --to is named" grep -q -- '--to: missing; expected a vLLM release' "$T/err"
check "--from 0.9 exits 2" [ "$(run --from 0.9 --to 0.16)" = 2 ]
check "--from 0.9 says why" grep -q -- '--from: --vllm-version 0.9: no connector pdkv emulates' "$T/err"
check "--to garbage exits 2" [ "$(run --from 0.16 --to latest)" = 2 ]
check "--to garbage is named" grep -q -- '--to: --vllm-version: expected a vLLM release' "$T/err"
check "same release exits 2" [ "$(run --from 0.16 --to 0.16.0)" = 2 ]
check "--timeout 0 exits 2" [ "$(run --from 0.16 --to 0.17 --timeout 0)" = 2 ]
check "a positional argument exits 2" [ "$(run --from 0.16 --to 0.17 extra)" = 2 ]

# gen-B shapes b0 -> bl: same-version cells pass (exit 0), mixed cells FAIL with the error
t0=$(date +%s)
rc=$(run --from 0.16 --to 0.31 --timeout 8 --json "$T/a.json" --junit "$T/a.xml")
secs=$(($(date +%s) - t0))
check "0.16 -> 0.31 exits 0 (got $rc)" [ "$rc" = 0 ]
check "0.16 -> 0.31 in under 60 s (took ${secs}s)" [ "$secs" -lt 60 ]
check "a progress line per cell" [ "$(grep -c '^# \[[1-4]/4\]' "$T/err")" = 4 ]
check "matrix printed" grep -q 'prefill 0.16 (b0) *PASS' "$T/out"
check "change list printed" grep -q 'kv_load_failure_policy default recompute -> fail' "$T/out"
check "json: keys" jq_ "$T/a.json" "all(k in j for k in ('from','to','older','newer','contracts','matrix','cells','changes','exit'))"
check "json: one contract, four cells" jq_ "$T/a.json" "j['contracts']==['mooncake'] and len(j['cells'])==4"
check "json: old/old and new/new pass" jq_ "$T/a.json" "j['matrix']['mooncake']['old/old']=='PASS' and j['matrix']['mooncake']['new/new']=='PASS' and j['exit']==0"
# the first error is the prefill's MooncakeXferMetadata line or, when the decode's log line is
# collected first, the decode's; either way the cell fails with a message
check "json: mixed cells fail with an error" jq_ "$T/a.json" "all(c['verdict']=='FAIL' and len(c['error'])>10 for c in j['cells'] if c['cell'] in ('old/new','new/old'))"
check "json: the shape change is listed" jq_ "$T/a.json" "any(c['kind']=='wire' and c['what'].startswith('b0 -> ') for c in j['changes'])"
check "junit: four testcases, no failure" bash -c "[ \$(grep -c '<testcase' '$T/a.xml') = 4 ] && ! grep -q '<failure' '$T/a.xml'"

# gen A -> gen B: two contracts, eight cells, mixed cells INCOMPATIBLE with an error
t0=$(date +%s)
rc=$(run --from 0.15 --to 0.16 --timeout 4 --json "$T/b.json")
secs=$(($(date +%s) - t0))
check "0.15 -> 0.16 exits 0 (got $rc)" [ "$rc" = 0 ]
check "0.15 -> 0.16 in bounded time (took ${secs}s)" [ "$secs" -lt 90 ]
check "json: both contracts, eight cells" jq_ "$T/b.json" "j['contracts']==['mooncake','toy'] and len(j['cells'])==8"
check "json: mixed cells INCOMPATIBLE with an error" jq_ "$T/b.json" "all(c['verdict']=='INCOMPATIBLE' and len(c['error'])>10 for c in j['cells'] if c['cell'] in ('old/new','new/old'))"
check "json: old/old passes under toy, new/new under mooncake" jq_ "$T/b.json" "j['matrix']['toy']['old/old']=='PASS' and j['matrix']['mooncake']['new/new']=='PASS'"
check "json: the router contract change is listed" jq_ "$T/b.json" "any(c['kind']=='router' and 'toy -> mooncake' in c['what'] for c in j['changes'])"
check "text: INCOMPATIBLE in the matrix" grep -q 'INCOMPATIBLE \[' "$T/out"

# V0 -> V1: the mixed cells cannot be deployed at all; the parser's reason is the error
rc=$(run --from 0.8.5 --to 0.12 --timeout 8 --json "$T/c.json")
check "0.8.5 -> 0.12 exits 0 (got $rc)" [ "$rc" = 0 ]
check "json: V0/V1 cells INCOMPATIBLE, not deployable" jq_ "$T/c.json" "all(c['verdict']=='INCOMPATIBLE' and 'not deployable' in c['error'] and 'vllm: prefill' in c['error'] for c in j['cells'] if c['cell'] in ('old/new','new/old'))"

[ "$fails" -eq 0 ]
