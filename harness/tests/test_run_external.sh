#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run --external against pdkv stand-ins and pdkv-proxy started here by hand (as a person
# would point it at a live vLLM deployment): V1 gen A (signal vllm:prompt_tokens_cached_total),
# gen B on 0.16, 0.20 and 0.31 (vllm:prompt_tokens_by_source_total in its two eras), V0 (no vLLM signal: the stand-in's own
# counter), a decode that silently recomputes (FAIL with the numbers), a /metrics without any
# signal (usage.prompt_tokens_details.cached_tokens, else NOTRUN with the reason), and counters
# that moved more than the workload explains.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
for b in pdkv-run pdkv-standin pdkv-proxy pdkv-metaserver; do
	[ -x "$BIN/$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 not installed (the fake /metrics)"; exit 77; }
. ci/testlib.sh # tl_procs, tl_free_base, tl_log_port
tl_procs pdkv-ext
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && { echo "--- output:"; tail -n 30 "$T/out"; }; exit 1; }
export MC_TCP_BIND_ADDRESS=127.0.0.1 VLLM_HOST_IP=127.0.0.1
MODEL=Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4
GEOM=(--kv-layers 2 --kv-heads 2 --head-dim 32 --hidden-size 64 --ns-per-token 1000)
TCP='"kv_connector_extra_config":{"mooncake_protocol":"tcp"}'
SC=scenarios/external/live-1p1d.json
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# standin NAME ARGS...: sets URL_NAME once /health answers
standin() {
	local name=$1 port=; shift
	"$BIN/pdkv-standin" --model $MODEL --port 0 --host 127.0.0.1 --max-model-len 4096 \
		"${GEOM[@]}" "$@" >"$T/$name.log" 2>&1 &
	PIDS+=($!)
	port=$(tl_log_port "$T/$name.log" 200 health)
	[ -n "$port" ] || { cat "$T/$name.log"; fail "stand-in $name did not start"; }
	eval "URL_$name=http://127.0.0.1:$port"
}
# proxy NAME ARGS...: pdkv-proxy on a free port; sets URL_NAME once /health answers 200
proxy() {
	local name=$1 port; shift
	port=$(free_port)
	"$BIN/pdkv-proxy" --host 127.0.0.1 --port "$port" "$@" >"$T/$name.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 200); do
		curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break
		sleep 0.05
	done
	eval "URL_$name=http://127.0.0.1:$port"
}
run() { "$BIN/pdkv-run" -v --json "$T/r.json" "$@" "$SC" >"$T/out" 2>&1; echo $?; }
has() { grep -qF -- "$1" "$T/out" || fail "output lacks: $1"; }

# ---- V1 gen A (vLLM 0.12): vllm:prompt_tokens_cached_total; a plain stand-in as reference
BA=$(tl_free_base)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BA standin pa --vllm-version 0.12 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
VLLM_MOONCAKE_BOOTSTRAP_PORT=$((BA + 40)) standin da --vllm-version 0.12 --enable-prompt-tokens-details \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
standin plain
proxy xa --contract toy --prefill "$URL_pa" --decode "$URL_da"
[ "$(run --external "prefill=$URL_pa,decode=$URL_da,proxy=$URL_xa,reference=$URL_plain")" = 0 ] ||
	fail "gen A external should pass"
has "signal vllm:prompt_tokens_cached_total"
has "live-1p1d [external]"
has "advice for decode: --no-enable-prefix-caching"
has "output_equal: 6 of 6 answers identical"

# decode's /metrics served by a stand-in of its own that has no vLLM counter at all (mode none),
# or whose counters jump by more than the workload (mode noisy)
fake_metrics() {
	local port
	port=$(free_port)
	python3 - "$port" "$1" >"$T/fake-$1.log" 2>&1 <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, mode, n = int(sys.argv[1]), sys.argv[2], [0]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        n[0] += 1
        if mode == "none":
            body = "vllm:prompt_tokens_total{model_name=\"m\"} %d\n" % (n[0] * 10)
        else:
            big = n[0] * 100000
            body = "".join('vllm:prompt_tokens_by_source_total{model_name="m",source="%s"} %d\n'
                           % (s, big) for s in ("local_compute", "local_cache_hit", "external_kv_transfer"))
        b = body.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
	PIDS+=($!)
	for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.05; done
	eval "URL_fake_$1=http://127.0.0.1:$port"
}
fake_metrics none
fake_metrics noisy
# no counter, but the answers carry cached_tokens (decode has --enable-prompt-tokens-details)
[ "$(run --external "prefill=$URL_pa,decode=$URL_fake_none,proxy=$URL_xa")" = 0 ] ||
	fail "usage.cached_tokens fallback should pass"
has "signal usage.prompt_tokens_details.cached_tokens"
has "output_equal: NOTRUN: no reference=URL"
# counters that moved more than the workload explains
[ "$(run --external "prefill=$URL_pa,decode=$URL_fake_noisy,proxy=$URL_xa")" = 1 ] ||
	fail "noisy counters should fail"
has "other traffic on this decode makes the deltas unreliable"

# ---- V1 gen B: vllm:prompt_tokens_by_source_total in each era (cfg_vllm.c): 0.16 and 0.20
# count a transferred prompt as external N + local_compute 1 (+ prompt_tokens_recomputed 1,
# vLLM #33290), 0.31 as external N + local_compute 0 (#37460). A correct transfer passes and a
# router that drops transfer_id (decode silently recomputes every prompt) fails, in each era.
for ver in 0.16 0.20 0.31; do
	tag=${ver//./}
	BB=$(tl_free_base)
	VLLM_MOONCAKE_BOOTSTRAP_PORT=$BB VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT=5 standin pb$tag --vllm-version $ver \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
	VLLM_MOONCAKE_BOOTSTRAP_PORT=$((BB + 40)) standin db$tag --vllm-version $ver \
		--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",\"kv_load_failure_policy\":\"recompute\",$TCP}"
	eval "P=\$URL_pb$tag D=\$URL_db$tag"
	proxy xb$tag --contract mooncake --prefill "$P" "$BB" --decode "$D"
	proxy xbad$tag --contract mooncake --fault drop-transfer-id --prefill "$P" "$BB" --decode "$D"
	eval "X=\$URL_xb$tag XBAD=\$URL_xbad$tag"
	if [ $ver = 0.31 ]; then
		era=">= 0.21 counting (#37460)" loc=0
	else
		era="0.16 - 0.20 counting (#33290)" loc=6
	fi
	[ "$(run --external "prefill=$P,decode=$D,proxy=$X")" = 0 ] || fail "gen B $ver external should pass"
	has "signal vllm:prompt_tokens_by_source_total, vLLM $era"
	has "external_kv_transfer +2709 (expected 2709 = the prompt per request), local_compute +$loc (expected $loc)"
	[ $loc = 6 ] && has "prompt_tokens_recomputed +6 (expected 6)"
	[ "$(run --external "prefill=$P,decode=$D,proxy=$XBAD")" = 1 ] ||
		fail "gen B $ver: a silent recompute must FAIL"
	has "external_kv_transfer +0 (expected 2709 = the prompt per request), local_compute +2709 (expected $loc)"
done
# vllm= pins the era; one that contradicts decode's /metrics fails naming both
[ "$(run --external "prefill=$P,decode=$D,proxy=$X,vllm=0.31.0")" = 0 ] || fail "vllm=0.31.0 should pass"
has "decode is vLLM 0.31.0 (table row 0.31)"
[ "$(run --external "prefill=$URL_pb016,decode=$URL_db016,proxy=$URL_xb016,vllm=0.31")" = 1 ] ||
	fail "vllm=0.31 against a 0.16 decode should fail"
has "is decode really 0.31?"
[ "$(run --external "prefill=$P,decode=$D,proxy=$X,vllm=0.10")" = 1 ] || fail "vllm=0.10 should fail"
has "--external vllm=: --vllm-version 0.10: no connector pdkv emulates"

# ---- V0 (vLLM 0.8, guide's pipe over pdkv-metaserver): no vLLM signal, the stand-in's counter
"$BIN/pdkv-metaserver" --port 0 --host 127.0.0.1 >"$T/ms.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	MS=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\)\/metadata.*/\1/p' "$T/ms.log"); [ -n "$MS" ] && break; sleep 0.05
done
[ -n "$MS" ] || fail "metaserver did not start"
B0=$(tl_free_base)
printf '{"prefill_url":"127.0.0.1:%s","decode_url":"127.0.0.1:%s","metadata_server":"http://127.0.0.1:%s/metadata","protocol":"tcp","device_name":""}\n' \
	"$B0" "$B0" "$MS" >"$T/mooncake.json"
KV='"kv_connector":"MooncakeConnector","kv_parallel_size":2,"kv_buffer_size":2e9'
MOONCAKE_CONFIG_PATH=$T/mooncake.json standin p0 --vllm-version 0.8 \
	--kv-transfer-config "{$KV,\"kv_role\":\"kv_producer\",\"kv_rank\":0}"
MOONCAKE_CONFIG_PATH=$T/mooncake.json standin d0 --vllm-version 0.8 \
	--kv-transfer-config "{$KV,\"kv_role\":\"kv_consumer\",\"kv_rank\":1}"
proxy x0 --prefill "$URL_p0" --decode "$URL_d0"
[ "$(run --external "prefill=$URL_p0,decode=$URL_d0,proxy=$URL_x0,reference=$URL_plain")" = 0 ] ||
	fail "V0 external should pass"
has "signal pdkv_kv_reused_tokens_total (a pdkv stand-in, no vLLM signal): reused +2709 of 2709"
# a V0 decode whose /metrics has no signal and whose answers carry no cached_tokens: NOTRUN
[ "$(run --external "prefill=$URL_p0,decode=$URL_fake_none,proxy=$URL_x0")" = 77 ] ||
	fail "no signal should be NOTRUN"
has "this vLLM exposes no signal that tells reuse from recompute; start decode with --enable-prompt-tokens-details"
# nothing listens at proxy=: a FAIL naming the requests, not a hang
[ "$(run --external "prefill=$URL_p0,decode=$URL_d0,proxy=http://127.0.0.1:1")" = 1 ] ||
	fail "an unreachable proxy should fail"
echo "PASS: external mode"
