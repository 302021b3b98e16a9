#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv-standin without a connector: flag parsing (vLLM flags ignored, unknown flag -> exit 2,
# bad config -> exit 1 with diagnostics), every endpoint incl. streaming and vLLM-shaped errors,
# /metrics names present at 0 before any request, and shutdown on SIGTERM within 2 s.
set -u
BIN=${PDKV_BIN:-build/bin}/pdkv-standin
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server

# ---- flags ----
"$BIN" --model m --bogus-flag 1 >"$TMP/o" 2>&1; rc=$?
check "unknown flag exits 2 (got $rc)" [ $rc -eq 2 ]
check "unknown flag message in the common style" grep -q "pdkv-standin: unknown option --bogus-flag" "$TMP/o"
"$BIN" --port notaport >"$TMP/o" 2>&1; rc=$?
check "bad --port exits 2 (got $rc)" [ $rc -eq 2 ]
"$BIN" --kv-miss-policy sometimes >"$TMP/o" 2>&1; rc=$?
check "bad --kv-miss-policy exits 2 (got $rc)" [ $rc -eq 2 ]
check "bad choice names the choices" grep -q "choose from 'recompute', 'fail', 'wait'" "$TMP/o"
PDKV_FAULT=explode "$BIN" --dry-run >"$TMP/o" 2>&1; rc=$?
check "bad PDKV_FAULT exits 2 (got $rc)" [ $rc -eq 2 ]
"$BIN" --help >"$TMP/o" 2>&1; rc=$?
check "--help exits 0" [ $rc -eq 0 ]
"$BIN" serve Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 --port 8100 --max-model-len 10000 \
	--gpu-memory-utilization 0.8 --enforce-eager --trust-remote-code --no-enable-prefix-caching \
	--quantization gptq --enable-chunked-prefill False --max_num_seqs 4 -tp 1 \
	--fault delay=5,drop --dry-run >"$TMP/o" 2>&1; rc=$?
check "vLLM flags accepted (exit $rc)" [ $rc -eq 0 ]
check "ignored flags noted in the log" grep -q "gpu-memory-utilization is accepted and ignored" "$TMP/o"
check "underscore spelling accepted" grep -q -- "--max-num-seqs is accepted and ignored" "$TMP/o"
MOONCAKE_CONFIG_PATH=$TMP/none.json "$BIN" --port 0 --dry-run \
	--kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_prod","kv_rank":0}' \
	>"$TMP/o" 2>&1; rc=$?
check "bad kv-transfer-config exits 1 (got $rc)" [ $rc -eq 1 ]
check "config diagnostics printed" grep -q "kv_role" "$TMP/o"
MOONCAKE_CONFIG_PATH=$TMP/none.json "$BIN" --port 0 --dry-run \
	--kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_rank":0,"kv_parallel_size":2}' \
	>"$TMP/o" 2>&1; rc=$?
check "missing mooncake.json exits 1 (got $rc)" [ $rc -eq 1 ]
check "mooncake.json diagnostic names the file" grep -q "none.json" "$TMP/o"

# ---- a plain instance ----
tl_start standin "$BIN" --model Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 --served-model-name qwen \
	--port 0 --host 127.0.0.1 --max-model-len 200 --ns-per-token 1000 --enforce-eager
U=http://127.0.0.1:$PORT
code() { curl -sS -o "$TMP/body" -w '%{http_code}' "$@"; }

c=$(code "$U/metrics")
check "/metrics 200" [ "$c" = 200 ]
for m in pdkv_kv_reused_tokens_total pdkv_kv_recomputed_tokens_total pdkv_kv_bytes_sent_total \
	pdkv_kv_bytes_received_total pdkv_kv_transfer_failures_total \
	pdkv_kv_checksum_failures_total pdkv_requests_total; do
	check "metric $m at 0 with TYPE" bash -c "grep -qx '# TYPE $m counter' '$TMP/body' && grep -qx '$m 0' '$TMP/body'"
done
for m in 'vllm:prompt_tokens_total{model_name="qwen"} 0' 'vllm:generation_tokens_total{model_name="qwen"} 0' \
	'vllm:num_requests_running{model_name="qwen"} 0'; do
	check "metric $m" grep -qxF "$m" "$TMP/body"
done
tl_promtool "plain stand-in" "$U/metrics"
c=$(code "$U/health"); check "/health 200 (got $c)" [ "$c" = 200 ]
c=$(code "$U/v1/models"); check "/v1/models 200" [ "$c" = 200 ]
check "/v1/models lists the served name" grep -q '"id":"qwen"' "$TMP/body"

c=$(code "$U/v1/completions" -H 'Content-Type: application/json' \
	-d '{"model":"qwen","prompt":"San Francisco is a","max_tokens":20,"temperature":0}')
check "completion 200 (got $c)" [ "$c" = 200 ]
check "completion shape" grep -q '"object":"text_completion".*"finish_reason":"length".*"usage":{"prompt_tokens":18,"total_tokens":38,"completion_tokens":20' "$TMP/body"
T1=$(sed 's/.*"text":"\([^"]*\)".*/\1/' "$TMP/body")
code "$U/v1/completions" -d '{"prompt":"San Francisco is a","max_tokens":20}' >/dev/null
T2=$(sed 's/.*"text":"\([^"]*\)".*/\1/' "$TMP/body")
check "deterministic text ('$T1')" [ -n "$T1" -a "$T1" = "$T2" ]
ids=$(printf 'San Francisco is a' | od -An -tu1 | tr -s ' \n' ',' | sed 's/^,//;s/,$//')
code "$U/v1/completions" -d "{\"prompt\":[$ids],\"max_tokens\":20}" >/dev/null
T3=$(sed 's/.*"text":"\([^"]*\)".*/\1/' "$TMP/body")
check "token-id prompt = string prompt" [ "$T1" = "$T3" ]

curl -sSN "$U/v1/completions" -d '{"model":"qwen","prompt":"San Francisco is a","max_tokens":20,"stream":true,"stream_options":{"include_usage":true}}' >"$TMP/sse"
check "stream ends with [DONE]" bash -c "tail -n 2 '$TMP/sse' | head -1 | grep -qx 'data: \[DONE\]'"
check "stream has 20 token chunks + usage" [ "$(grep -c '"text":' "$TMP/sse")" -eq 20 ]
check "stream final chunk has finish_reason" grep -q '"finish_reason":"length"' "$TMP/sse"
check "stream usage chunk" grep -q '"choices":\[\],"usage":{"prompt_tokens":18' "$TMP/sse"
TS=$(grep -o '"text":"[^"]*"' "$TMP/sse" | sed 's/"text":"\(.*\)"/\1/' | tr -d '\n')
check "stream text = non-stream text" [ "$TS" = "$T1" ]

c=$(code "$U/v1/chat/completions" -d '{"model":"qwen","messages":[{"role":"user","content":"What is the capital of France?"}],"max_tokens":8}')
check "chat 200 (got $c)" [ "$c" = 200 ]
check "chat shape" grep -q '"object":"chat.completion".*"message":{"role":"assistant"' "$TMP/body"
curl -sSN "$U/v1/chat/completions" -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}' >"$TMP/sse"
check "chat stream role chunk" grep -q '"delta":{"role":"assistant","content":""}' "$TMP/sse"
check "chat stream [DONE]" grep -qx 'data: \[DONE\]' "$TMP/sse"

c=$(code "$U/v1/completions" -d '{"prompt": "x",')
check "bad JSON 400 (got $c)" [ "$c" = 400 ]
check "bad JSON error object" grep -q '"object":"error".*"type":"BadRequestError".*"code":400' "$TMP/body"
# issue 34 D11: a prompt that is not UTF-8 is refused as vLLM does (FastAPI cannot parse the
# body); well-formed UTF-8 and an escaped lone surrogate still pass
printf '{"prompt":"caf\xe9 \xff","max_tokens":3}' >"$TMP/latin1"
c=$(code "$U/v1/completions" --data-binary @"$TMP/latin1")
check "non-UTF-8 prompt 400 (got $c)" [ "$c" = 400 ]
check "non-UTF-8 prompt: vLLM's message" grep -q '"message":"There was an error parsing the body","type":"Bad Request"' "$TMP/body"
c=$(code "$U/v1/chat/completions" --data-binary $'{"messages":[{"role":"user","content":"\xc3"}],"max_tokens":3}')
check "non-UTF-8 chat content 400 (got $c)" [ "$c" = 400 ]
c=$(code "$U/v1/completions" --data-binary $'{"prompt":"caf\xc3\xa9 \xe2\x82\xac","max_tokens":3}')
check "UTF-8 prompt 200 (got $c)" [ "$c" = 200 ]
c=$(code "$U/v1/completions" -d '{"max_tokens":3}')
check "missing prompt 400 (got $c)" [ "$c" = 400 ]
long=$(head -c 250 /dev/zero | tr '\0' 'a')
c=$(code "$U/v1/completions" -d "{\"prompt\":\"$long\"}")
check "prompt too long 400 (got $c)" [ "$c" = 400 ]
check "too long message names max-model-len" grep -q "maximum context length is 200 tokens" "$TMP/body"
c=$(code "$U/v1/completions" -d '{"prompt":"abc","max_tokens":199}')
check "prompt+max_tokens too long 400 (got $c)" [ "$c" = 400 ]
c=$(code "$U/v1/completions" -d '{"model":"nope","prompt":"abc"}')
check "unknown model 404 (got $c)" [ "$c" = 404 ]
c=$(code "$U/v1/completions" -d '{"prompt":[1,2,99999]}')
check "out-of-vocabulary id 400 (got $c)" [ "$c" = 400 ]
c=$(code "$U/nope"); check "unknown path 404 (got $c)" [ "$c" = 404 ]
c=$(code "$U/v1/completions"); check "GET on POST route 405 (got $c)" [ "$c" = 405 ]

code "$U/metrics" >/dev/null
check "requests counted" grep -qx 'pdkv_requests_total 13' "$TMP/body"
check "nothing reused/recomputed on a plain instance" bash -c "grep -qx 'pdkv_kv_reused_tokens_total 0' '$TMP/body' && grep -qx 'pdkv_kv_recomputed_tokens_total 0' '$TMP/body'"
check "request log line" grep -q "role=plain prompt_tokens=18 reused=0 recomputed=0" "$TMP/log"

t0=$(date +%s%N)
kill -TERM "$PID"
for _ in $(seq 40); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
wait "$PID"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
PID=
check "SIGTERM -> exit 0 (got $rc) within 2 s (${ms} ms)" [ $rc -eq 0 -a $ms -lt 2000 ]
check "shutdown logged" grep -q "stopped" "$TMP/log"
# restart on the same port at once (SO_REUSEADDR)
"$BIN" --port "$PORT" --host 127.0.0.1 >"$TMP/log2" 2>&1 &
PID=$!
c=000
for _ in $(seq 60); do c=$(curl -s -o /dev/null -w '%{http_code}' "$U/health"); [ "$c" = 200 ] && break; sleep 0.05; done
check "restart on the same port at once (health $c)" [ "$c" = 200 ]
kill -TERM "$PID"; wait "$PID"; PID=

[ $fails -eq 0 ] || { echo "--- standin log"; tail -n 30 "$TMP/log"; echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
