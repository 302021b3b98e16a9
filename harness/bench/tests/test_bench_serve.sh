#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
# vllm bench serve's unmeasured initial test run, once per point (the hand-off counts above
# are 4: it is not in them); a proxy that never answers fails the point when its timeout ends
check "text: every point starts with the initial test run" \
	[ "$(grep -c '^Initial test run completed' "$T/out")" = 4 ]
t0=$(date +%s)
timeout 30 "$B" serve --base-url http://127.0.0.1:1 --num-prompts 1 --ready-check-timeout-sec 2 \
	>/dev/null 2>"$T/err4"
rc=$?
check "dead proxy: exit 1 after --ready-check-timeout-sec ($rc, $(($(date +%s) - t0)) s)" \
	[ $rc = 1 ] && [ $(($(date +%s) - t0)) -lt 15 ]
check "dead proxy: says the initial test run failed and why" \
	grep -q "initial test run failed (.* tries in 2 s, --ready-check-timeout-sec).*Error: transport error" "$T/err4"
"$BIN/pdkv-report" compare "$T/s.json" "$T/s.json" >"$T/cmp" 2>&1
check "pdkv report compare reads the rows" [ $? = 0 ]

# vllm bench serve's flags: ShareGPT prompts, chat backend, percentiles, goodput, --save-result
timeout 120 "$B" serve "$SC" --backend openai-chat --dataset-name sharegpt \
	--dataset-path fixtures/sharegpt/pdkv-mini.json --num-prompts 6 --request-rate 50 \
	--burstiness 0.5 --ignore-eos --percentile-metrics ttft,e2el --metric-percentiles 50,99.9 \
	--goodput "ttft:60000 e2el:60000" --save-result --result-dir "$T/res" --csv "$T/g.csv" \
	--plot "$T/g.png" >"$T/out2" 2>"$T/err2"
rc=$?
check "sharegpt + chat sweep exits 0 ($rc)" [ $rc = 0 ]
check "text: P99.9 TTFT and P50 E2EL, no TPOT block" bash -c "grep -q '^P99.9 TTFT (ms):' '$T/out2' && grep -q '^P50 E2EL (ms):' '$T/out2' && ! grep -q '^Mean TPOT' '$T/out2'"
check "text: request goodput with --goodput" grep -q '^Request goodput (req/s): ' "$T/out2"
check "progress: a line per second with done/total and ETA" grep -qE '^\[pd rate=50 conc=none\] [0-9]+/6 requests.*elapsed, ETA' "$T/err2"
f=$(ls "$T"/res/openai-chat-50.0qps-Qwen2.5-7B-Instruct-GPTQ-Int4-*.json 2>/dev/null | head -1)
check "--save-result: vLLM's file name ($f)" [ -n "$f" ]
check "--save-result: vLLM's keys, ShareGPT lengths" python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("date", "backend", "model_id", "num_prompts", "request_rate", "burstiness",
          "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
          "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
          "total_token_throughput", "input_lens", "output_lens", "ttfts", "itls", "errors",
          "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms",
          "p99.9_e2el_ms"):
    assert k in d, k
assert d["backend"] == "openai-chat" and d["request_rate"] == 50 and d["burstiness"] == 0.5
assert d["max_concurrency"] is None and d["completed"] == 6 and d["failed"] == 0
# the fixture's usable prompts (10 of 13), one token per byte, repeated to 6 requests
assert len(d["input_lens"]) == 6 and all(4 <= n <= 1024 for n in d["input_lens"]), d["input_lens"]
assert d["request_goodput"] > 0 and "mean_tpot_ms" not in d
PY
check "csv: rate and input length columns" bash -c "head -1 '$T/g.csv' | grep -q 'request_rate,max_concurrency,input_len,' && sed -n 2p '$T/g.csv' | grep -q '^pd,50,,'"
grep -q '^pd,inf,2,300,' "$T/s.csv"; check "csv: rate inf written as inf, input length 300" [ $? = 0 ]
check "plot written (gnuplot)" [ -s "$T/g.png" ]

# interrupted mid-sweep: partial results written, nothing left running, exit 130
mkdir -p "$T/tmp"
TMPDIR=$T/tmp "$B" serve "$SC" --num-prompts 400 --request-rate 40,inf --max-concurrency 2 --random-input-len 200 \
	--output-len 6 --compare-single --single-args "--kv-layers 4 --kv-heads 2 --head-dim 64 --ns-per-token 2000" \
	--json "$T/i.json" --csv "$T/i.csv" >"$T/out3" 2>"$T/err3" &
pid=$!
for _ in $(seq 100); do grep -qE '\[pd rate=40 conc=2\] [1-9][0-9]*/400' "$T/err3" && break; sleep 0.2; done
kill -INT $pid
wait $pid
rc=$?
check "SIGINT mid-sweep exits 130 ($rc)" [ $rc = 130 ]
check "partial point written (interrupted)" python3 - "$T/i.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["points"]
assert len(p) == 1 and p[0]["interrupted"] and p[0]["name"] == "pd rate=40 conc=2", p
c = {r["metric"]: r["value"] for r in d["rows"]}
assert 0 < c["completed"] < 400 and c["failed"] == 0, c
PY
check "csv marks the point interrupted" grep -q ',true$' "$T/i.csv"
sleep 0.5
left=$(pgrep -f "pdkv-serve-" || true)
check "nothing it started is left running ($left)" [ -z "$left" ]
check "nothing left in TMPDIR ($(ls "$T/tmp"))" [ -z "$(ls -A "$T/tmp")" ]

[ $fails = 0 ] || { tail -30 "$T/out"; tail -n 5 "$T/err2" "$T/err3"; echo "$fails check(s) failed"; exit 1; }
