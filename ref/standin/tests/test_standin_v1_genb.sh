#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# V1 gen B (b0 and bn) 1P1D with the router steps of vLLM's mooncake_connector_proxy written out:
# decode reuses every prompt token (vLLM's metrics and pdkv's) and answers like a plain
# stand-in; TP=2; two dp engines behind one bootstrap server; a router that drops transfer_id
# makes decode recompute; kv_load_failure_policy fail / recompute with the prefill killed.
. "$(dirname "$0")/v1lib.inc"
export VLLM_LOG_STATS_INTERVAL=1 # vLLM's "KV Transfer metrics:" line every second, not 10
PROMPT="The capital of France is a city called"
start plain --vllm-version 0.18
REF=$(post $PORT_plain "$(body "$PROMPT" 12)" | text)
N=$(echo "$REF" >/dev/null; python3 -c 'import sys; print(len(sys.argv[1].encode()))' "$PROMPT")

pair() { # pair TAG VERSION SHAPE [P args] -- [D args]; sets BOOT
	local tag=$1 ver=$2 shape=$3 pa=() da=() side=p; shift 3
	for a in "$@"; do [ "$a" = -- ] && { side=d; continue; }; [ $side = p ] && pa+=("$a") || da+=("$a"); done
	BOOT=$(free_port)
	VLLM_MOONCAKE_BOOTSTRAP_PORT=$BOOT start P$tag --vllm-version $ver --v1-shape $shape \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}" "${pa[@]}"
	start D$tag --vllm-version $ver --v1-shape $shape \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}" "${da[@]}"
}

for shape in bn b0; do
	pair $shape 0.18 $shape
	eval "P=\$PORT_P$shape D=\$PORT_D$shape"
	check "$shape: bootstrap /query lists the prefill's engine" \
		grep -q '"worker_addr":{"0":{"0":"tcp://127.0.0.1:' <(curl -s http://127.0.0.1:$BOOT/query)
	OUT=$(route_b $P $D $BOOT "$PROMPT" 12 0 | text)
	check "$shape: decode text equals the plain stand-in's ('$OUT')" [ "$OUT" = "$REF" ]
	check "$shape: pdkv_kv_reused_tokens_total = $N" [ "$(metric $D pdkv_kv_reused_tokens_total)" = "$N" ]
	check "$shape: pdkv_kv_recomputed_tokens_total = 0" [ "$(metric $D pdkv_kv_recomputed_tokens_total)" = 0 ]
	# 0.18 counts the vLLM #33290 way: external n, local_compute 1, prompt_tokens_recomputed 1
	check "$shape: external_kv_transfer = n" [ "$(metric $D 'vllm:prompt_tokens_by_source_total.*external_kv_transfer')" = $N ]
	check "$shape: local_compute = 1" [ "$(metric $D 'vllm:prompt_tokens_by_source_total.*local_compute')" = 1 ]
	check "$shape: prompt_tokens_recomputed = 1" [ "$(metric $D 'vllm:prompt_tokens_recomputed_total')" = 1 ]
	check "$shape: P-side pdkv_kv1_xfer_bytes_count = 1" [ "$(metric $P 'pdkv_kv1_xfer_bytes_count')" = 1 ]
	check "$shape: no vllm:mooncake_* (no release has them, vLLM #50374)" \
		[ -z "$(curl -s http://127.0.0.1:$P/metrics | grep 'vllm:mooncake_')" ]
	for _ in $(seq 40); do grep -q "KV Transfer metrics: Num successful" "$TMP/P$shape.log" && break; sleep 0.1; done
	check "$shape: prefill logs vLLM's KV Transfer metrics line for its one WRITE" \
		grep -qE "KV Transfer metrics: Num successful transfers=1, Avg xfer time \(ms\)=[0-9.]+, P90 xfer time \(ms\)=[0-9.]+, Avg MB per transfer=[0-9.]+, Throughput \(MB/s\)=[0-9.]+, Avg number of descriptors=[0-9.]+, Num failed transfers=0, Num failed recvs=0, Num KV expired reqs=0" "$TMP/P$shape.log"
	curl -sS -m 10 "http://127.0.0.1:$P/metrics" >"$TMP/m$shape"
	tl_promtool "$shape: prefill" "http://127.0.0.1:$P/metrics"
	tl_promtool "$shape: decode" "http://127.0.0.1:$D/metrics"
	for m in pdkv_kv1_writes_abandoned_total pdkv_kv1_writes_abandoned_held \
		pdkv_kv1_writes_refused_total; do
		check "$shape: prefill /metrics has $m 0" grep -q "^$m 0" "$TMP/m$shape"
	done
	curl -sS -m 10 "http://127.0.0.1:$D/metrics" >"$TMP/d$shape"
	for m in pdkv_kv1_recv_holds_total pdkv_kv1_recv_held_blocks \
		pdkv_kv1_recvs_refused_total pdkv_kv_check_rescans_total; do
		check "$shape: decode /metrics has $m 0" grep -q "^$m 0" "$TMP/d$shape"
	done
	# every part (the 4 layers' keys and values) summed by the engine thread that received it
	check "$shape: pdkv_kv_check_parts_landed_total = 8" [ "$(metric $D pdkv_kv_check_parts_landed_total)" = 8 ]
	# a router that drops transfer_id: P warns, D warns and recomputes
	OUT=$(route_b $P $D $BOOT "$PROMPT" 12 0 drop | text)
	check "$shape: without transfer_id decode recomputes ($N tokens)" [ "$(metric $D pdkv_kv_recomputed_tokens_total)" = "$N" ]
	check "$shape: ... and still answers the same text" [ "$OUT" = "$REF" ]
	check "$shape: decode logs Got invalid KVTransferParams" grep -q "Got invalid KVTransferParams" "$TMP/D$shape.log"
	check "$shape: prefill logs Missing transfer_id" grep -q "Missing transfer_id in kv_transfer_params from router!" "$TMP/P$shape.log"
done

# TP=2: one ROUTER and segment per rank, heads split
pair tp 0.18 bn -tp 2 -- -tp 2
OUT=$(route_b $PORT_Ptp $PORT_Dtp $BOOT "$PROMPT" 12 0 | text)
check "tp2: decode text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "tp2: two workers registered" grep -q '"1":{"0":"tcp://' <(curl -s http://127.0.0.1:$BOOT/query)
check "tp2: reused = $N" [ "$(metric $PORT_Dtp pdkv_kv_reused_tokens_total)" = "$N" ]
check "tp2: every part summed as it landed on both ranks' engines" [ "$(metric $PORT_Dtp pdkv_kv_check_parts_landed_total)" = 8 ]
check "tp2: no rescan" [ "$(metric $PORT_Dtp pdkv_kv_check_rescans_total)" = 0 ]

# Bl, TP=2: one KV buffer per layer holding its K and V (vLLM's LBHNC registration,
# sa_v1_layout.c); the decode's per-piece check cuts pieces at the K|V middle of a block
pair bltp 0.18 bl -tp 2 -- -tp 2
OUT=$(route_b $PORT_Pbltp $PORT_Dbltp $BOOT "$PROMPT" 12 0 | text)
check "bl tp2: decode text equals the plain stand-in's" [ "$OUT" = "$REF" ]
check "bl tp2: decode lays its KV out as one buffer per layer, head-major (LBHNC)" \
	grep -q "4 KV buffers x .*layout LBHNC" "$TMP/Dbltp.log"
check "bl tp2: reused = $N" [ "$(metric $PORT_Dbltp pdkv_kv_reused_tokens_total)" = "$N" ]
check "bl tp2: every part summed as it landed" [ "$(metric $PORT_Dbltp pdkv_kv_check_parts_landed_total)" = 8 ]
check "bl tp2: no checksum failure" [ "$(metric $PORT_Dbltp pdkv_kv_checksum_failures_total)" = 0 ]

# DP=2: two dp engines in one prefill process, one bootstrap server, routed by X-data-parallel-rank
pair dp 0.18 bn -dp 2 -- -dp 2
Q=$(curl -s http://127.0.0.1:$BOOT/query)
check "dp2: /query has dp ranks 0 and 1 with distinct engine ids" python3 -c '
import json,sys; d=json.loads(sys.argv[1]); assert set(d)=={"0","1"} and d["0"]["engine_id"]!=d["1"]["engine_id"]' "$Q"
for dp in 0 1; do
	OUT=$(route_b $PORT_Pdp $PORT_Ddp $BOOT "$PROMPT" 12 $dp | text)
	check "dp2: dp rank $dp: decode text equals the plain stand-in's" [ "$OUT" = "$REF" ]
done
check "dp2: reused = 2n" [ "$(metric $PORT_Ddp pdkv_kv_reused_tokens_total)" = $((2 * N)) ]
check "dp2: the prefill served dp=1 once" grep -q "dp=1 role=kv_producer" "$TMP/Pdp.log"

# kv_load_failure_policy with the prefill killed while decode waits for its blocks. The two
# policies run side by side (each waits for its dead prefill): a pair each, started here, and
# post's files under $TMP/POLICY; the checks come after both requests ended.
export VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT=2
for pol in fail recompute; do
	pair $pol 0.18 bn -- --kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",\"kv_load_failure_policy\":\"$pol\",$TCP}"
	eval "BOOT_$pol=\$BOOT"
done
policy_case() { # policy_case POLICY (in the background): response, status, seconds in $TMP/POLICY/
	local pol=$1 D PIDP B eng db t0 t1
	eval "D=\$PORT_D$pol PIDP=\$PID_P$pol B=\$BOOT_$pol"
	TMP=$TMP/$pol # this subshell's post writes status, hdr and resp here
	mkdir -p "$TMP"
	eng=$(curl -s "http://127.0.0.1:$B/query" | jget '["0"]["engine_id"]')
	db=$(body "$PROMPT" 12 "{\"do_remote_decode\":false,\"do_remote_prefill\":true,\"remote_bootstrap_addr\":\"http://127.0.0.1:$B\",\"remote_engine_id\":\"$eng\",\"transfer_id\":\"xfer-never\"}")
	( sleep 0.5; kill -9 $PIDP ) &
	t0=$(date +%s)
	post $D "$db" >"$TMP/R"
	t1=$(date +%s)
	echo $((t1 - t0)) >"$TMP/secs"
	wait $!
}
policy_case fail &
pf=$!
policy_case recompute &
wait $pf $!
for pol in fail recompute; do
	eval "D=\$PORT_D$pol"
	R=$(cat "$TMP/$pol/R"); st=$(cat "$TMP/$pol/status"); secs=$(cat "$TMP/$pol/secs")
	if [ $pol = fail ]; then
		check "policy fail: prefill killed -> HTTP 500 ($st) with a JSON error in bounded time ($secs s)" \
			[ "$st" = 500 -a "$secs" -lt 40 ]
		check "policy fail: error names the policy" grep -q "kv_load_failure_policy fail" <<<"$R"
	else
		check "policy recompute: prefill killed -> 200 ($st) and recomputed" [ "$st" = 200 -a "$(metric $D pdkv_kv_recomputed_tokens_total)" = "$N" ]
		check "policy recompute: text equals the plain stand-in's" [ "$(echo "$R" | text)" = "$REF" ]
	fi
done
unset VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT

# rdma default on a host without RDMA: clear startup error naming the field
if [ ! -d /sys/class/infiniband ]; then
	"$BIN/pdkv-standin" --port 0 --kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_consumer"}' >"$TMP/rdma.log" 2>&1; rc=$?
	check "rdma default without a device: exit 1 naming kv_connector_extra_config.mooncake_protocol" \
		[ $rc = 1 ] && grep -q "kv_connector_extra_config.mooncake_protocol" "$TMP/rdma.log"
fi
[ $fails = 0 ] && echo "all V1 gen B checks passed" || { echo "$fails check(s) failed"; for f in "$TMP"/*.log; do echo "--- $f"; tail -5 "$f"; done; }
[ $fails = 0 ]
