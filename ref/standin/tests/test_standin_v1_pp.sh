#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 PP on the prefill side (--pipeline-parallel-size 2, vLLM #44528) on 0.31: two stages, each
# registered under its pp_rank with its half of the layers; a decode of PP 1 pulls from both and
# answers like a plain stand-in; a decode of 0.23 (Bn, no layer names) gets vLLM's assertion;
# the roles and releases PP does not work with are refused by name.
. "$(dirname "$0")/v1lib.inc"
PROMPT="The capital of France is a city called"
start plain --vllm-version 0.31
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)
N=$(python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")
BOOT=$(free_port)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P --vllm-version 0.31 --pipeline-parallel-size 2 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
start D --vllm-version 0.31 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
Q=$(curl -s http://127.0.0.1:$BOOT/query)
check "/query lists pp ranks 0 and 1 under tp 0" \
	python3 -c 'import json,sys; w=json.loads(sys.argv[1])["0"]["worker_addr"]["0"]; sys.exit(sorted(w)!=["0","1"])' "$Q"
check "prefill logs stage 1 with layers 2-3" grep -q "pp 1 (layers 2-3)" "$TMP/P.log"
OUT=$(route_b $PORT_P $PORT_D $BOOT "$PROMPT" 12 0 | text)
check "decode text equals the plain stand-in's ('$OUT')" [ -n "$OUT" -a "$OUT" = "$REF" ]
check "pdkv_kv_reused_tokens_total = $N" [ "$(metric $PORT_D pdkv_kv_reused_tokens_total)" = $N ]
check "no checksum failure on decode" [ "$(metric $PORT_D pdkv_kv_checksum_failures_total)" = 0 ]
# a decode from before #44528 (0.23: Bn, no registered_layer_names)
start Dold --vllm-version 0.23 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",\"kv_load_failure_policy\":\"fail\",$TCP}"
route_b $PORT_P $PORT_Dold $BOOT "$PROMPT" 12 0 >/dev/null
check "0.23 decode: vLLM's metadata-length assertion from the PP prefill" \
	grep -q "Mooncake transfer regions require matching metadata lengths, got base_addrs=8, block_lens=8, kv_block_lens=8, layer_names=0, layer_indices=0." "$TMP/Dold.log"
refused() { # refused TAG WHY ARGS...: the stand-in exits non-zero naming WHY
	local tag=$1 why=$2 p rc; shift 2
	"$BIN/pdkv-standin" --model $MODEL --port 0 --host 127.0.0.1 --kv-layers 4 "$@" >"$TMP/$tag.log" 2>&1 &
	p=$!
	for _ in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.05; done
	if kill -0 $p 2>/dev/null; then kill $p; wait $p 2>/dev/null; rc=0; else wait $p; rc=$?; fi
	if [ $rc -ne 0 ] && grep -q "$why" "$TMP/$tag.log"; then ok "$tag: refused (rc $rc) naming '$why'"
	else bad "$tag: refused (rc $rc) naming '$why'"; fi
}
refused consumer "PP on the prefill side only" --vllm-version 0.31 --pipeline-parallel-size 2 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
refused old "needs the Bl wire (vLLM #44528" --vllm-version 0.23 --pipeline-parallel-size 2 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
refused layers "multiple of it" --vllm-version 0.31 -pp 3 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
[ $fails = 0 ] && echo "all V1 PP checks passed" || { echo "$fails check(s) failed"; for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
