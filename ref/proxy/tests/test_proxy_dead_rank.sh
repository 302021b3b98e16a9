#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 34 N1 over loopback with real stand-ins: a gen B prefill's bootstrap server binds where
# --bootstrap-host says (default 0.0.0.0 as vLLM); a bogus dp rank POSTed to /register with a
# worker that does not answer; pdkv-proxy (mooncake) fails that rank's requests at once with
# 503 naming the rank and address, and keeps serving rank 0.
. "$(dirname "$0")/../../standin/tests/v1lib.inc"
PX=$BIN/pdkv-proxy
[ -x "$PX" ] || { echo "SKIP: pdkv-proxy not built"; exit 77; }
fails=0
BOOT=$(free_port)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P --bootstrap-host 127.0.0.1 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
start D --kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
check "bootstrap bound on 127.0.0.1:$BOOT (--bootstrap-host)" \
	grep -q "Bootstrap Server started at 127.0.0.1:$BOOT" "$TMP/P.log"
BOOT2=$(free_port)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT2 start P2 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
check "default bind is vLLM's 0.0.0.0:$BOOT2" \
	grep -q "Bootstrap Server started at 0.0.0.0:$BOOT2" "$TMP/P2.log"
DEAD=$(free_port)
st=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-d "{\"engine_id\":\"bogus\",\"dp_rank\":1,\"tp_rank\":0,\"pp_rank\":0,\"addr\":\"tcp://127.0.0.1:$DEAD\"}" \
	"http://127.0.0.1:$BOOT/register")
check "a bogus dp rank registers (vLLM's server takes any: HTTP $st)" [ "$st" = 200 ]
"$PX" --contract mooncake --host 127.0.0.1 --port 0 --prefill "http://127.0.0.1:$PORT_P" "$BOOT" \
	--decode "http://127.0.0.1:$PORT_D" >"$TMP/px.log" 2>&1 &
PIDS+=($!)
PXP=
for _ in $(seq 100); do
	PXP=$(sed -n 's/.*listening on [^:]*:\([0-9]*\);.*/\1/p' "$TMP/px.log")
	[ -n "$PXP" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PXP/health")" = 200 ] && break
	sleep 0.1
done
check "proxy ready with dp_size 2" grep -q "dp_size=2" "$TMP/px.log"
n200=0 n503=0
for i in 1 2 3 4; do
	t0=$(date +%s.%N)
	code=$(curl -s -m 20 -o "$TMP/r$i" -w '%{http_code}' -H 'Content-Type: application/json' \
		-d "$(body "The capital of France is" 8)" "http://127.0.0.1:$PXP/v1/completions")
	dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	echo "request $i: HTTP $code in ${dt}s"
	[ "$code" = 200 ] && n200=$((n200 + 1))
	if [ "$code" = 503 ]; then
		n503=$((n503 + 1))
		check "503 within 3 s (${dt}s)" awk -v d="$dt" 'BEGIN{exit !(d < 3)}'
		check "503 names the rank and the address" grep -q "dp rank 1 (engine bogus): worker tcp://127.0.0.1:$DEAD does not answer" "$TMP/r$i"
	fi
done
check "rank 0 served twice ($n200 x 200)" [ $n200 = 2 ]
check "the dead rank failed fast twice ($n503 x 503)" [ $n503 = 2 ]
check "proxy logged the dead rank" grep -q "dp rank 1 (engine bogus): worker tcp://127.0.0.1:$DEAD does not answer" "$TMP/px.log"
[ $fails = 0 ] || { for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
