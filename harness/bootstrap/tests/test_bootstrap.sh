#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv bootstrap with vLLM's bootstrap_server_address: a gen B prefill stand-in registers at the
# standalone server and starts none of its own; pdkv-proxy --contract mooncake reads /query there;
# decode reuses the prompt's KV. Then a bad address, an unreachable one, usage and SIGTERM.
. "$(dirname "$0")/../../../ref/standin/tests/v1lib.inc"
[ -x "$BIN/pdkv-bootstrap" ] && [ -x "$BIN/pdkv-proxy" ] ||
	{ echo "SKIP: pdkv-bootstrap or pdkv-proxy not built"; exit 77; }
PROMPT="The capital of France is a city called"
N=$(python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")
kvt() { # kvt ROLE ADDR -> a kv-transfer-config with bootstrap_server_address
	echo "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"$1\",\"kv_connector_extra_config\":{\"mooncake_protocol\":\"tcp\",\"bootstrap_server_address\":\"$2\"}}"
}

# usage errors
"$BIN/pdkv" bootstrap --vllm-version 0.13 >"$TMP/usage" 2>&1
check "gen a release refused (exit 2)" [ $? = 2 ]
check "... saying it has no bootstrap server" grep -q "has no bootstrap server" "$TMP/usage"
"$BIN/pdkv" bootstrap --port 70000 >"$TMP/usage" 2>&1
check "--port 70000 refused (exit 2)" [ $? = 2 ]

# the standalone server
BOOT=$(free_port)
"$BIN/pdkv" bootstrap --port "$BOOT" >"$TMP/boot.log" 2>&1 &
BPID=$!
PIDS+=($BPID)
check "pdkv bootstrap prints its URL" [ "$(tl_log_port "$TMP/boot.log")" = "$BOOT" ]
check "GET /query answers {} before any registration" [ "$(curl -s "http://127.0.0.1:$BOOT/query")" = "{}" ]

start plain
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)

# the prefill's own bootstrap port (VLLM_MOONCAKE_BOOTSTRAP_PORT) must stay unbound
OWN=$(free_port)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$OWN start P --kv-transfer-config "$(kvt kv_producer "127.0.0.1:$BOOT")"
if grep -q "bootstrap_server_address is not read by vLLM" "$TMP/P.log"; then
	echo "SKIP: no release row has CFG_F_BOOT_ADDR yet (ref/cfg/cfg_vllm.c)"
	exit 77
fi
check "prefill started" [ -n "$PORT_P" ]
check "prefill registered at the standalone server" \
	grep -q '"worker_addr":{"0":{"0":"tcp://127.0.0.1:' <(curl -s "http://127.0.0.1:$BOOT/query")
check "prefill started no bootstrap server on VLLM_MOONCAKE_BOOTSTRAP_PORT" \
	bash -c "! curl -s -m 2 -o /dev/null http://127.0.0.1:$OWN/query"
start D --kv-transfer-config "$(kvt kv_consumer "127.0.0.1:$BOOT")"

"$BIN/pdkv-proxy" --contract mooncake --host 127.0.0.1 --port 0 \
	--prefill "http://127.0.0.1:$PORT_P" "$BOOT" --decode "http://127.0.0.1:$PORT_D" >"$TMP/px.log" 2>&1 &
PIDS+=($!)
PX=$(tl_log_port "$TMP/px.log")
check "proxy started" [ -n "$PX" ]
for _ in $(seq 100); do # 503 until the proxy has read /query
	OUT=$(post "$PX" "$(body "$PROMPT" 12)")
	[ "$(cat "$TMP/status")" = 200 ] && break
	sleep 0.1
done
check "request through the proxy: 200" [ "$(cat "$TMP/status")" = 200 ]
check "decode text equals the plain stand-in's" [ "$(echo "$OUT" | text)" = "$REF" ]
check "decode reused every prompt token ($N)" [ "$(metric $PORT_D pdkv_kv_reused_tokens_total)" = "$N" ]
check "decode recomputed nothing" [ "$(metric $PORT_D pdkv_kv_recomputed_tokens_total)" = 0 ]

# a bad address: vLLM's ValueError text, and no start
"$BIN/pdkv-standin" --model $MODEL --port 0 --host 127.0.0.1 --kv-layers 4 \
	--kv-transfer-config "$(kvt kv_producer 127.0.0.1)" >"$TMP/bad.log" 2>&1
check "address without a port: the prefill exits non-zero" [ $? != 0 ]
check "... with vLLM's text" grep -q "bootstrap_server_address must specify a host and port" "$TMP/bad.log"

# an address where nothing listens: three attempts, then vLLM's RuntimeError text
DEAD=$(free_port)
timeout 30 "$BIN/pdkv-standin" --model $MODEL --port 0 --host 127.0.0.1 --kv-layers 4 \
	--kv-transfer-config "$(kvt kv_producer "127.0.0.1:$DEAD")" >"$TMP/dead.log" 2>&1
check "unreachable server: the prefill exits non-zero" [ $? != 0 ]
check "... after 3 attempts, with the payload and URL" grep -q \
	"Failed to register engine_id='.*' dp_rank=0 tp_rank=0 pp_rank=0 addr='tcp://127.0.0.1:[0-9]*' with the Mooncake bootstrap server at http://127.0.0.1:$DEAD/register after 3 attempts." \
	"$TMP/dead.log"

kill -TERM $BPID
wait $BPID
check "SIGTERM stops pdkv bootstrap with exit 0" [ $? = 0 ]
check "... logging the engines it held" grep -q "stopping (1 engines registered)" "$TMP/boot.log"
[ $fails = 0 ]
