#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 gen A 1P1D with the router steps of vLLM's toy proxy written out: P (max_tokens 1) returns
# its side channel in kv_transfer_params, D pulls the blocks and answers like a plain stand-in;
# TP=2; a router that does not copy P's params makes D recompute; and the hazard: on a release
# that randomises request ids (0.13-0.15) P does not know D's id, answers trans_done without
# writing, and D decodes garbage (checksum failures counted, different text).
. "$(dirname "$0")/v1lib.inc"
PROMPT="Where is the capital of France?"
start plain --vllm-version 0.15
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)
N=$(python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")

pair() { # pair TAG VERSION [args for both]
	local tag=$1 ver=$2; shift 2
	export VLLM_MOONCAKE_BOOTSTRAP_PORT=$(free_port)
	start P$tag --vllm-version $ver \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}" "$@"
	start D$tag --vllm-version $ver \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}" "$@"
	unset VLLM_MOONCAKE_BOOTSTRAP_PORT
}

export VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1
pair a 0.15
R=$(post $PORT_Pa "$(body "$PROMPT" 1 '{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}')" "X-Request-Id: probe")
check "gen A: P returns {do_remote_prefill, do_remote_decode, remote_host, remote_port}" python3 -c '
import json,sys; p=json.loads(sys.argv[1])["kv_transfer_params"]
assert p["do_remote_prefill"] is True and p["do_remote_decode"] is False and p["remote_host"] and p["remote_port"] > 0' "$R"
OUT=$(route_a $PORT_Pa $PORT_Da "$PROMPT" 12 | text)
check "gen A: decode text equals the plain stand-in's ('$OUT')" [ "$OUT" = "$REF" ]
check "gen A: reused = $N, recomputed = 0" [ "$(metric $PORT_Da pdkv_kv_reused_tokens_total)" = "$N" -a "$(metric $PORT_Da pdkv_kv_recomputed_tokens_total)" = 0 ]
check "gen A: vllm:prompt_tokens_cached_total = n-1" [ "$(metric $PORT_Da 'vllm:prompt_tokens_cached_total')" = $((N - 1)) ]
tl_promtool "gen A prefill" "http://127.0.0.1:$PORT_Pa/metrics"
tl_promtool "gen A decode" "http://127.0.0.1:$PORT_Da/metrics"
check "gen A: no by_source metric on 0.15" [ -z "$(curl -s http://127.0.0.1:$PORT_Da/metrics | grep prompt_tokens_by_source)" ]
OUT=$(route_a $PORT_Pa $PORT_Da "$PROMPT" 12 drop | text)
check "gen A: router not copying P's params -> decode recomputes" [ "$(metric $PORT_Da pdkv_kv_recomputed_tokens_total)" = "$N" -a "$OUT" = "$REF" ]

pair tp 0.15 -tp 2
OUT=$(route_a $PORT_Ptp $PORT_Dtp "$PROMPT" 12 | text)
check "gen A tp2: decode text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "gen A tp2: reused = $N" [ "$(metric $PORT_Dtp pdkv_kv_reused_tokens_total)" = "$N" ]
check "gen A tp2: ROUTERs at BASE and BASE+1" [ "$(grep -c 'side channel tcp://127.0.0.1:' "$TMP/Ptp.log")" = 2 ]

# the hazard: randomised request ids
unset VLLM_DISABLE_REQUEST_ID_RANDOMIZATION
pair hz 0.15
OUT=$(route_a $PORT_Phz $PORT_Dhz "$PROMPT" 12 | text)
check "hazard: P logs Request ... not found in reqs_need_send" grep -q "not found in reqs_need_send" "$TMP/Phz.log"
check "hazard: D counts a checksum failure" [ "$(metric $PORT_Dhz pdkv_kv_checksum_failures_total)" -ge 1 ]
check "hazard: D's text differs from the plain stand-in's ('$OUT')" [ "$OUT" != "$REF" ]
[ $fails = 0 ] && echo "all V1 gen A checks passed" || { echo "$fails check(s) failed"; for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
