#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 Mamba/GDN N-1 mode (--kv-groups full,mamba, vLLM #46807) on 0.31: the decode loads N-1
# prompt tokens and computes the last one, its counters say so (pdkv's and vLLM's by-source),
# the text equals a plain stand-in's; a release before #46807 refuses the mode by name.
. "$(dirname "$0")/v1lib.inc"
PROMPT="The capital of France is a city called"
G=(--kv-groups full,mamba)
start plain --vllm-version 0.31 "${G[@]}"
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)
N=$(python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")
BOOT=$(free_port)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P --vllm-version 0.31 "${G[@]}" \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
start D --vllm-version 0.31 "${G[@]}" \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
check "prefill logs the Mamba/GDN N-1 rule" grep -q "Mamba/GDN model (vLLM #46807)" "$TMP/P.log"
OUT=$(route_b $PORT_P $PORT_D $BOOT "$PROMPT" 12 0 | text)
check "decode text equals the plain stand-in's ('$OUT')" [ -n "$OUT" -a "$OUT" = "$REF" ]
check "pdkv_kv_reused_tokens_total = N-1 = $((N - 1))" [ "$(metric $PORT_D pdkv_kv_reused_tokens_total)" = $((N - 1)) ]
check "pdkv_kv_recomputed_tokens_total = 0" [ "$(metric $PORT_D pdkv_kv_recomputed_tokens_total)" = 0 ]
check "pdkv_kv_mamba_n1_requests_total = 1" [ "$(metric $PORT_D pdkv_kv_mamba_n1_requests_total)" = 1 ]
check "external_kv_transfer = N-1" [ "$(metric $PORT_D 'vllm:prompt_tokens_by_source_total.*external_kv_transfer')" = $((N - 1)) ]
check "local_compute = 1 (the last token)" [ "$(metric $PORT_D 'vllm:prompt_tokens_by_source_total.*local_compute')" = 1 ]
check "prompt_tokens_cached = N-1" [ "$(metric $PORT_D 'vllm:prompt_tokens_cached_total')" = $((N - 1)) ]
check "no checksum failure on decode" [ "$(metric $PORT_D pdkv_kv_checksum_failures_total)" = 0 ]
# a release before #46807 has no Mamba path in its MooncakeConnector
"$BIN/pdkv-standin" --model $MODEL --port 0 --host 127.0.0.1 --vllm-version 0.25 "${G[@]}" \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}" \
	>"$TMP/old.log" 2>&1 &
OLD=$!
for _ in $(seq 100); do kill -0 $OLD 2>/dev/null || break; sleep 0.05; done
if kill -0 $OLD 2>/dev/null; then kill $OLD; wait $OLD 2>/dev/null; RC=0; else wait $OLD; RC=$?; fi
check "0.25 with a mamba group exits non-zero (rc $RC)" [ $RC -ne 0 ]
check "... naming #46807" grep -q "needs a vLLM whose MooncakeConnector handles Mamba layers (#46807" "$TMP/old.log"
[ $fails = 0 ] && echo "all V1 Mamba/GDN checks passed" || { echo "$fails check(s) failed"; for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
