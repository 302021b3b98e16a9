#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 gen B, the decode's check of received KV overlapped with the transfer (sa_v1_check.c):
# streamed decodes send their first token before the check ends and still answer like a plain
# stand-in; with the prefill's KV corrupted (--fault corrupt) a streamed decode ends with an
# error object and no [DONE], a non-streamed one decodes the wrong KV (as vLLM would), and both
# count a checksum failure; TP=2 and the keys-first WRITE order keep the text.
. "$(dirname "$0")/v1lib.inc"
PROMPT="The capital of France is a city called"
start plain --vllm-version 0.18
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)

pair() { # pair TAG [P args] -- [D args]; sets BOOT
	local tag=$1 pa=() da=() side=p; shift
	for a in "$@"; do [ "$a" = -- ] && { side=d; continue; }; [ $side = p ] && pa+=("$a") || da+=("$a"); done
	BOOT=$(free_port)
	VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P$tag --vllm-version 0.18 \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}" "${pa[@]}"
	start D$tag --vllm-version 0.18 \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}" "${da[@]}"
}
# route_bs P D BOOT PROMPT MAX_TOKENS: gen B router steps with the decode streamed; the SSE
# body in $TMP/sse; prints the streamed text
route_bs() {
	local id tid eng pb db
	id=$(uuid); tid="xfer-$id"
	eng=$(curl -s "http://127.0.0.1:$3/query" | jget '["0"]["engine_id"]')
	pb=$(body "$4" 1 "{\"do_remote_decode\":true,\"do_remote_prefill\":false,\"transfer_id\":\"$tid\"}")
	db=$(body "$4" "$5" "{\"do_remote_decode\":false,\"do_remote_prefill\":true,\"remote_bootstrap_addr\":\"http://127.0.0.1:$3\",\"remote_engine_id\":\"$eng\",\"transfer_id\":\"$tid\"}" |
		python3 -c 'import json,sys; b=json.load(sys.stdin); b["stream"]=True; print(json.dumps(b))')
	curl -s -m 60 -o /dev/null -H "X-Request-Id: $id" -H 'Content-Type: application/json' \
		-d "$pb" "http://127.0.0.1:$1/v1/completions"
	curl -s -N -m 60 -D "$TMP/shdr" -H "X-Request-Id: $id" -H 'Content-Type: application/json' -d "$db" \
		"http://127.0.0.1:$2/v1/completions" >"$TMP/sse"
	python3 - "$TMP/sse" <<'PY'
import json, sys
t = ""
for l in open(sys.argv[1]):
    if l.startswith("data: {"):
        for c in json.loads(l[6:]).get("choices", []):
            t += c.get("text", "")
print(t)
PY
}
no_done() { ! grep -q '^data: \[DONE\]' "$TMP/sse"; }
done_last() { [ "$(grep '^data: ' "$TMP/sse" | tail -1)" = "data: [DONE]" ]; }

export PDKV_LOG=debug
pair ok
BOOT_ok=$BOOT # the good pair's bootstrap port (each pair call sets BOOT anew)
OUT=$(route_bs $PORT_Pok $PORT_Dok $BOOT "$PROMPT" 12)
check "streamed decode text equals the plain stand-in's ('$OUT')" [ "$OUT" = "$REF" ]
check "... ends with data: [DONE]" done_last
check "... checked after its first token" grep -q "checked after the first token" "$TMP/Dok.log"
check "... no checksum failure" [ "$(metric $PORT_Dok pdkv_kv_checksum_failures_total)" = 0 ]
check "... no X-PDKV-KV-Check trailer" bash -c "! grep -qi '^X-PDKV-KV-Check' '$TMP/shdr'"
OUT=$(route_b $PORT_Pok $PORT_Dok $BOOT "$PROMPT" 12 0 | text)
check "non-streamed decode text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "... its check overlapped the transfer (check_wait stage logged)" grep -q "check_wait=" "$TMP/Dok.log"

pair bad --fault corrupt --
OUT=$(route_bs $PORT_Pbad $PORT_Dbad $BOOT "$PROMPT" 12)
check "corrupt, streamed: an error object in the stream" grep -q '^data: {"error":{"object":"error"' "$TMP/sse"
check "corrupt, streamed: no data: [DONE]" no_done
check "corrupt, streamed: 1 checksum failure" [ "$(metric $PORT_Dbad pdkv_kv_checksum_failures_total)" = 1 ]
check "corrupt, streamed: decode logs why the stream ended" grep -q "so the stream ends with an error" "$TMP/Dbad.log"
check "corrupt, streamed: HTTP trailer X-PDKV-KV-Check: failed (issue 34, N4)" grep -qi "^X-PDKV-KV-Check: failed" "$TMP/shdr"
OUT=$(route_b $PORT_Pbad $PORT_Dbad $BOOT "$PROMPT" 12 0 | text)
check "corrupt, non-streamed: HTTP 200" [ "$(cat $TMP/status)" = 200 ]
check "corrupt, non-streamed: text follows the wrong KV ('$OUT')" [ "$OUT" != "$REF" ]
check "corrupt, non-streamed: 2 checksum failures" [ "$(metric $PORT_Dbad pdkv_kv_checksum_failures_total)" = 2 ]
check "corrupt, non-streamed: marked X-PDKV-KV-Check: failed (issue 34, N4)" grep -qi "^X-PDKV-KV-Check: failed" "$TMP/hdr"
OUT=$(route_b $PORT_Pok $PORT_Dok $BOOT_ok "$PROMPT" 12 0 | text)
check "good KV: HTTP 200" [ "$(cat $TMP/status)" = 200 ]
check "good KV: text equals the plain stand-in's ('$OUT')" [ "$OUT" = "$REF" ]
check "good KV: no X-PDKV-KV-Check header" bash -c "! grep -qi '^X-PDKV-KV-Check' '$TMP/hdr'"

pair pf --fault corrupt -- --kv-integrity-policy fail
OUT=$(route_b $PORT_Ppf $PORT_Dpf $BOOT "$PROMPT" 12 0)
check "corrupt, --kv-integrity-policy fail: HTTP 500" [ "$(cat $TMP/status)" = 500 ]
check "... the error names the policy" grep -q "kv-integrity-policy fail" "$TMP/resp"
pair pr --fault corrupt -- --kv-integrity-policy recompute
OUT=$(route_b $PORT_Ppr $PORT_Dpr $BOOT "$PROMPT" 12 0 | text)
check "corrupt, --kv-integrity-policy recompute: HTTP 200" [ "$(cat $TMP/status)" = 200 ]
check "... text equals the plain stand-in's ('$OUT')" [ "$OUT" = "$REF" ]
check "... still marked X-PDKV-KV-Check: failed" grep -qi "^X-PDKV-KV-Check: failed" "$TMP/hdr"

pair tp -tp 2 -- -tp 2
OUT=$(route_bs $PORT_Ptp $PORT_Dtp $BOOT "$PROMPT" 12)
check "tp2 streamed: text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "tp2 streamed: ends with data: [DONE]" done_last
OUT=$(route_b $PORT_Ptp $PORT_Dtp $BOOT "$PROMPT" 12 0 | text)
check "tp2 non-streamed: text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "tp2: no checksum failure" [ "$(metric $PORT_Dtp pdkv_kv_checksum_failures_total)" = 0 ]
[ $fails = 0 ] && echo "all V1 stream-check checks passed" || { echo "$fails check(s) failed"; for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
