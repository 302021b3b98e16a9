#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 1P1D without a proxy, on a real pdkv-metaserver (http metadata) and the V0 connector over TCP:
# prefill (max_tokens=1) then decode with the same prompt -> decode reused every prompt token and
# its text equals a plain stand-in's; a prompt never prefilled is recomputed with a WARNING; then
# the faults: corrupt -> checksum failure counted + recompute, drop -> silent recompute,
# and the fail policy -> HTTP 503 with a JSON error.
set -u
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-standin" ] && [ -x "$BIN/pdkv-metaserver" ] || { echo "SKIP: pdkv-standin/pdkv-metaserver not built"; exit 77; }
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 40); do
		local alive=0
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.05
	done
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../../../ci/testlib.sh"
T0=$(date +%s%N)
el() { echo $((($(date +%s%N) - T0) / 1000000)); }
ok() { echo "ok   [$(el) ms] $*"; }
MODEL=Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4

"$BIN/pdkv-metaserver" --port 0 --host 127.0.0.1 >"$TMP/ms.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	MS=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\)\/metadata.*/\1/p' "$TMP/ms.log"); [ -n "$MS" ] && break; sleep 0.05
done
[ -n "$MS" ] || { cat "$TMP/ms.log"; echo "FAIL metaserver did not start"; exit 1; }

# start NAME ARGS... : starts a stand-in on a free HTTP port; sets PORT_<NAME>
start() {
	local name=$1 port=; shift
	"$BIN/pdkv-standin" --vllm-version 0.8 --model $MODEL --port 0 --host 127.0.0.1 --max-model-len 10000 \
		--ns-per-token 2000 --enforce-eager "$@" >"$TMP/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$name=$!"
	port=$(tl_log_port "$TMP/$name.log" 200 health)
	eval "PORT_$name=$port"
	[ -n "$port" ] || { echo "--- $name log"; cat "$TMP/$name.log"; }
}
stop() {
	local p rc
	eval "p=\$PID_$1"
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null; rc=$?
	check "$1 exits 0 on SIGTERM (got $rc)" [ $rc -eq 0 ]
}
pair() { # pair TAG [prefill args] -- [decode args]
	local tag=$1 base; shift
	base=$(tl_free_base)
	printf '{"prefill_url":"127.0.0.1:%s","decode_url":"127.0.0.1:%s","metadata_server":"http://127.0.0.1:%s/metadata","protocol":"tcp","device_name":""}\n' \
		$base $base $MS >"$TMP/mooncake-$tag.json"
	local pa=() da=() side=p
	for a in "$@"; do [ "$a" = -- ] && { side=d; continue; }; [ $side = p ] && pa+=("$a") || da+=("$a"); done
	MOONCAKE_CONFIG_PATH=$TMP/mooncake-$tag.json start P$tag \
		--kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_rank":0,"kv_parallel_size":2,"kv_buffer_size":2e9}' "${pa[@]}"
	MOONCAKE_CONFIG_PATH=$TMP/mooncake-$tag.json start D$tag \
		--kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_consumer","kv_rank":1,"kv_parallel_size":2,"kv_buffer_size":2e9}' "${da[@]}"
	# Another process on this host may take a pipe port between tl_free_base and the bind: try
	# fresh ports (at most 3 times) rather than report someone else's port as our failure.
	local pp dp
	eval "pp=\$PORT_P$tag dp=\$PORT_D$tag"
	if { [ -z "$pp" ] || [ -z "$dp" ]; } && [ "${PAIR_TRY:-0}" -lt 3 ] &&
		grep -qs 'Address already in use' "$TMP/P$tag.log" "$TMP/D$tag.log"; then
		local pid
		for pid in PID_P$tag PID_D$tag; do kill -TERM "${!pid}" 2>/dev/null; wait "${!pid}" 2>/dev/null; done
		echo "note: pair $tag hit a port taken by another process; retrying on fresh ports"
		PAIR_TRY=$((${PAIR_TRY:-0} + 1)) pair "$tag" "$@"
	fi
}
post() { # post PORT BODY -> body in $TMP/body, echoes status
	curl -sS -o "$TMP/body" -w '%{http_code}' "http://127.0.0.1:$1/v1/completions" -H 'Content-Type: application/json' -d "$2"
}
text() { sed 's/.*"text":"\([^"]*\)".*/\1/' "$TMP/body"; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

start plain
PROMPTS=("San Francisco is a" "The capital of France is" "$(printf 'x%.0s' $(seq 600)) long prompt")
declare -A WANT
for p in "${PROMPTS[@]}"; do
	post $PORT_plain "{\"model\":\"$MODEL\",\"prompt\":\"$p\",\"max_tokens\":24}" >/dev/null
	WANT[$p]=$(text)
done

# ---- 1P1D, no fault ----
pair A
check "prefill and decode healthy" [ -n "$PORT_PA" -a -n "$PORT_DA" ]
total=0
for p in "${PROMPTS[@]}"; do
	c=$(post $PORT_PA "{\"model\":\"$MODEL\",\"prompt\":\"$p\",\"max_tokens\":1}")
	check "prefill 200 (${#p} tokens)" [ "$c" = 200 ]
	c=$(post $PORT_DA "{\"model\":\"$MODEL\",\"prompt\":\"$p\",\"max_tokens\":24}")
	check "decode 200 (${#p} tokens)" [ "$c" = 200 ]
	got=$(text)
	check "decode text = plain text ('$got')" [ "$got" = "${WANT[$p]}" ]
	total=$((total + ${#p}))
done
# streaming decode
post $PORT_PA "{\"prompt\":\"San Francisco is a\",\"max_tokens\":1}" >/dev/null
curl -sSN "http://127.0.0.1:$PORT_DA/v1/completions" -d '{"prompt":"San Francisco is a","max_tokens":24,"stream":true}' >"$TMP/sse"
st=$(grep -o '"text":"[^"]*"' "$TMP/sse" | sed 's/"text":"\(.*\)"/\1/' | tr -d '\n')
check "streamed decode text = plain text" [ "$st" = "${WANT[San Francisco is a]}" ]
total=$((total + 18))
r=$(metric $PORT_DA pdkv_kv_reused_tokens_total)
check "decode reused all $total prompt tokens (got $r)" [ "$r" = "$total" ]
check "decode recomputed 0" [ "$(metric $PORT_DA pdkv_kv_recomputed_tokens_total)" = 0 ]
check "decode computed nothing" [ "$(metric $PORT_DA pdkv_kv_computed_tokens_total)" = 0 ]
check "no checksum failures" [ "$(metric $PORT_DA pdkv_kv_checksum_failures_total)" = 0 ]
rx=$(metric $PORT_DA pdkv_kv_bytes_received_total)
check "decode received >= 57344 B/token x $total ($rx)" [ "${rx:-0}" -ge $((57344 * total)) ]
tx=$(metric $PORT_PA pdkv_kv_bytes_sent_total)
check "prefill sent the same KV bytes ($tx)" [ "${tx:-0}" -ge $((57344 * total)) ]
tl_promtool "V0 prefill" "http://127.0.0.1:$PORT_PA/metrics"
tl_promtool "V0 decode" "http://127.0.0.1:$PORT_DA/metrics"
# never prefilled -> silent recompute (vLLM default), with a WARNING naming the request
c=$(post $PORT_DA '{"prompt":"never prefilled","max_tokens":4}')
check "miss -> 200 under recompute" [ "$c" = 200 ]
check "miss counted as 15 recomputed tokens" [ "$(metric $PORT_DA pdkv_kv_recomputed_tokens_total)" = 15 ]
check "miss WARNING names the request" grep -q "WARN .*request cmpl-.*KV not received.*recomputing 15 prompt tokens" "$TMP/DA.log"
t0=$(date +%s%N); stop DA; stop PA; ms=$((($(date +%s%N) - t0) / 1000000))
check "both stopped within 2 s each (${ms} ms total)" [ $ms -lt 4000 ]
check "decode logged stopped" grep -q "stopped" "$TMP/DA.log"

# ---- fault corrupt: checksum failure counted, text still right (recomputed) ----
pair B --fault corrupt
post $PORT_PB '{"prompt":"San Francisco is a","max_tokens":1}' >/dev/null
post $PORT_DB '{"prompt":"San Francisco is a","max_tokens":24}' >/dev/null
check "corrupt: decode text still equals plain (recomputed)" [ "$(text)" = "${WANT[San Francisco is a]}" ]
check "corrupt: 1 checksum failure" [ "$(metric $PORT_DB pdkv_kv_checksum_failures_total)" = 1 ]
check "corrupt: 18 recomputed" [ "$(metric $PORT_DB pdkv_kv_recomputed_tokens_total)" = 18 ]
stop DB; stop PB

# ---- fault drop (env spelling): silent recompute; fail policy -> 503 JSON error ----
PDKV_FAULT=drop pair C -- --kv-miss-policy fail --kv-select-timeout 1000
post $PORT_PC '{"prompt":"San Francisco is a","max_tokens":1}' >/dev/null
check "drop: prefill logged the fault" grep -q "fault drop" "$TMP/PC.log"
c=$(post $PORT_DC '{"prompt":"San Francisco is a","max_tokens":24}')
check "drop + fail policy: 503 (got $c)" [ "$c" = 503 ]
check "drop + fail policy: vLLM error object" grep -q '"object":"error".*"code":503' "$TMP/body"
check "drop: nothing reused" [ "$(metric $PORT_DC pdkv_kv_reused_tokens_total)" = 0 ]
stop DC; stop PC

# ---- TP=2: each rank's connector carries its half of the KV heads ----
pair F -tp 2 -- -tp 2
post $PORT_PF '{"prompt":"San Francisco is a","max_tokens":1}' >/dev/null
post $PORT_DF '{"prompt":"San Francisco is a","max_tokens":24}' >/dev/null
check "tp 2: decode text = plain text" [ "$(text)" = "${WANT[San Francisco is a]}" ]
check "tp 2: 18 reused" [ "$(metric $PORT_DF pdkv_kv_reused_tokens_total)" = 18 ]
check "tp 2: two connector ranks" grep -q "rank 1: decode end" "$TMP/DF.log"
stop DF; stop PF

# ---- fault crash=2 + delay: the 2nd prefill dies right after its insert; wait policy -> 503 ----
pair E --fault delay=100,crash=2 -- --kv-miss-policy wait --kv-wait-timeout 1500
c=$(post $PORT_DE '{"prompt":"first","max_tokens":3}' &
	sleep 0.3; post $PORT_PE '{"prompt":"first","max_tokens":1}' >/dev/null; wait)
check "wait policy: decode sent before prefill still hits" [ "$(metric $PORT_DE pdkv_kv_reused_tokens_total)" = 5 ]
c=$(post $PORT_PE '{"prompt":"second","max_tokens":1}')
check "crash: prefill request gets no answer (got $c)" [ "$c" = 000 ]
wait $PID_PE; rc=$?
check "crash: prefill exited 1 (got $rc)" [ $rc -eq 1 ]
check "crash: logged" grep -q "fault crash: request .* is number 2" "$TMP/PE.log"
c=$(post $PORT_DE '{"prompt":"second","max_tokens":3}')
check "crash + wait policy: decode 503 after the bound (got $c)" [ "$c" = 503 ]
stop DE

[ $fails -eq 0 ] || { for f in "$TMP"/*.log; do echo "--- $f"; tail -n 15 "$f"; done; echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
