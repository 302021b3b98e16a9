#!/usr/bin/env bash
# test_bench_serve: `pdkv bench serve` end to end, bounded — usage errors (exit 2), then a tiny
# rate x concurrency sweep against a V1 gen B scenario started by the runner library, with
# --compare-single; checks the text block, the JSON rows (pdkv report compare's rows format),
# the CSV and that pdkv report compare reads the JSON.
set -u
BIN=${PDKV_BIN:-build/bin}
B="$BIN/pdkv-bench"
[ -x "$B" ] && [ -x "$BIN/pdkv-standin" ] && [ -x "$BIN/pdkv-proxy" ] || { echo "SKIP: pdkv-bench/standin/proxy not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 (json) not found"; exit 77; }
export MC_TCP_BIND_ADDRESS=127.0.0.1 PDKV_BIN=$BIN
T=$(mktemp -d /tmp/pdkv-test-serve.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi; }

"$B" serve >/dev/null 2>&1; check "no target: exit 2" [ $? = 2 ]
"$B" serve --base-url http://127.0.0.1:1 --request-rate fast >/dev/null 2>"$T/err"; rc=$?
check "bad --request-rate: exit 2 naming the flag" [ $rc = 2 ] && grep -q -- "--request-rate" "$T/err"
"$B" serve --base-url http://127.0.0.1:1 --max-concurrency 0 >/dev/null 2>&1; check "--max-concurrency 0: exit 2" [ $? = 2 ]
"$B" serve --help | grep -q -- "--random-input-len"; check "--help lists vllm bench serve's flags" [ $? = 0 ]

SC=scenarios/16-v1-gen-b0-1p1d.json
timeout 120 "$B" serve "$SC" --num-prompts 4 --request-rate 20,inf --max-concurrency 2 \
	--random-input-len 300 --output-len 6 --seed 7 --compare-single \
	--single-args "--kv-layers 4 --kv-heads 2 --head-dim 64 --ns-per-token 2000" \
	--json "$T/s.json" --csv "$T/s.csv" >"$T/out" 2>&1
rc=$?
check "sweep against $SC exits 0 ($rc)" [ $rc = 0 ]
check "text: vllm bench serve's result block" grep -q "============ Serving Benchmark Result ============" "$T/out"
check "text: every point of the sweep, pd and single" [ "$(grep -c '^Successful requests: *4' "$T/out")" = 4 ]
check "json: rows with TTFT/TPOT/ITL/E2E percentiles and hand-off goodput" python3 - "$T/s.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "pdkv bench serve", d["tool"]
rows = d["rows"]
names = {r["name"] for r in rows}
assert names == {"pd rate=20 conc=2", "pd rate=inf conc=2", "single rate=20 conc=2", "single rate=inf conc=2"}, names
m = {(r["name"], r["metric"]): r for r in rows}
for n in names:
    assert m[(n, "completed")]["value"] == 4
    for k in ("ttft", "tpot", "itl", "e2el"):
        for p in ("mean", "median", "p90", "p99"):
            r = m[(n, f"{p}_{k}")]
            assert r["unit"] == "ms" and r["better"] == "lower" and r["value"] >= 0
    assert m[(n, "request_throughput")]["value"] > 0
for n in ("pd rate=20 conc=2", "pd rate=inf conc=2"):
    assert m[(n, "handoff_count")]["value"] == 4, m[(n, "handoff_count")]
    assert m[(n, "handoff_goodput")]["value"] > 0 and m[(n, "handoff_goodput")]["unit"] == "GB/s"
for r in rows:
    assert r["better"] in ("higher", "lower", "none") and isinstance(r["value"], (int, float))
PY
check "csv: header and 4 rows" [ "$(wc -l <"$T/s.csv")" = 5 ]
"$BIN/pdkv-report" compare "$T/s.json" "$T/s.json" >"$T/cmp" 2>&1
check "pdkv report compare reads the rows" [ $? = 0 ]
[ $fails = 0 ] || { tail -30 "$T/out"; echo "$fails check(s) failed"; exit 1; }
