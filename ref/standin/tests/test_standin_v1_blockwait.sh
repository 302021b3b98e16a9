#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 gen B with a KV pool too small for the requests in flight: requests wait for free blocks
# (as vLLM's scheduler keeps them waiting) and all complete with their KV reused; a request larger
# than the whole pool fails at once; a prefill that offers no KV gets decode's pull refused at once.
. "$(dirname "$0")/v1lib.inc"
# 6 blocks of 16 tokens each per request, a pool of 8: one request at a time holds blocks
PROMPT="Pool exhaustion: this prompt needs six blocks of sixteen tokens when one token is a byte!!"
N=$(python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")
KVP="{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
KVC="{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
# One side short at a time: with both pools short, P's finished requests (holding P blocks
# until D pulls) and D's waiting ones (holding D blocks until P computes) can block each other
# until --kv-block-wait-timeout-ms, as vLLM's two schedulers could.
pair() { # pair TAG [P args] -- [D args]
	local tag=$1 pa=() da=() side=p; shift
	for a in "$@"; do [ "$a" = -- ] && { side=d; continue; }; [ $side = p ] && pa+=("$a") || da+=("$a"); done
	BOOT=$(free_port)
	# 2 ms a token: a prefill takes ~0.2 s, so the requests overlap and the pool runs short
	VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P$tag --vllm-version 0.18 --ns-per-token 2000000 \
		--kv-transfer-config "$KVP" "${pa[@]}"
	start D$tag --vllm-version 0.18 --kv-transfer-config "$KVC" "${da[@]}"
	ENG=$(curl -s "http://127.0.0.1:$BOOT/query" | jget '["0"]["engine_id"]')
	eval "PORT_P=\$PORT_P$tag PORT_D=\$PORT_D$tag"
}

one() { # one K PROMPT: a gen B request routed by hand, D's status and body in $TMP/K.*
	local id tid pb db
	id=$(uuid); tid="xfer-$id"
	pb=$(body "$2" 1 "{\"do_remote_decode\":true,\"do_remote_prefill\":false,\"transfer_id\":\"$tid\"}")
	db=$(body "$2" 8 "{\"do_remote_decode\":false,\"do_remote_prefill\":true,\"remote_bootstrap_addr\":\"http://127.0.0.1:$BOOT\",\"remote_engine_id\":\"$ENG\",\"transfer_id\":\"$tid\"}")
	curl -s -m 120 -o "$TMP/$1.p" -w '%{http_code}' -H "X-Request-Id: $id" -H 'Content-Type: application/json' \
		-d "$pb" "http://127.0.0.1:$PORT_P/v1/completions" >"$TMP/$1.pst" &
	curl -s -m 120 -o "$TMP/$1.d" -w '%{http_code}' -H "X-Request-Id: $id" -H 'Content-Type: application/json' \
		-d "$db" "http://127.0.0.1:$PORT_D/v1/completions" >"$TMP/$1.dst"
	wait $!
}

burst() { # burst TAG SHORT-SIDE(P|D)
JOBS=()
for k in 1 2 3 4 5 6; do one $1$k "$PROMPT" & JOBS+=($!); done
wait "${JOBS[@]}" # not a bare wait: the stand-ins are children too
all200=1
for k in 1 2 3 4 5 6; do
	[ "$(cat "$TMP/$1$k.pst")" = 200 ] && [ "$(cat "$TMP/$1$k.dst")" = 200 ] || {
		all200=0; echo "request $k: prefill $(cat "$TMP/$1$k.pst") decode $(cat "$TMP/$1$k.dst"): $(cat "$TMP/$1$k.p" "$TMP/$1$k.d")"; }
done
check "$1: 6 concurrent requests, $2 has 8 blocks: all answered 200" [ $all200 = 1 ]
check "$1: decode reused every prompt token (6 x $N)" [ "$(metric $PORT_D pdkv_kv_reused_tokens_total)" = $((6 * N)) ]
check "$1: nothing recomputed" [ "$(metric $PORT_D pdkv_kv_recomputed_tokens_total)" = 0 ]
W=$(metric $(eval echo \$PORT_$2) pdkv_kv_block_waits_total)
check "$1: $2 requests waited for blocks (pdkv_kv_block_waits_total = $W > 0)" [ "$W" -gt 0 ]
check "$1: the wait is logged" grep -q "waiting for 6 free KV blocks" "$TMP/$2$1.log"

}
pair p --num-gpu-blocks-override 8
burst p P
pair d -- --num-gpu-blocks-override 8
burst d D
# larger than the whole pool (9 blocks > 8): fails at once, with the flag to raise
BIG=$(python3 -c 'print("x" * 140)')
one big "$BIG"
check "a prompt larger than the decode pool: decode answers 500" [ "$(cat "$TMP/big.dst")" = 500 ]
check "... and names the flag to raise" grep -q "no free KV blocks on dp 0 rank 0 (9 needed; raise --num-gpu-blocks-override)" "$TMP/Dd.log"
one again "$PROMPT"
check "the pool is whole afterwards: another request gets 200" [ "$(cat "$TMP/again.dst")" = 200 ]
[ $fails = 0 ] && echo "all ok" || echo "$fails failed"
[ $fails = 0 ]
