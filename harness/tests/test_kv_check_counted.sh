#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 34 N4 on every path: KV that fails the decode's check is marked X-PDKV-KV-Check: failed
# on V0 (plain and streamed, each --kv-integrity-policy) and gen A as on gen B, and pdkv run's
# request summary, pdkv bench serve and pdkv run --external count such answers as failed; bench
# serve's exit follows any failed request, not only when all failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
for b in pdkv pdkv-run pdkv-standin pdkv-proxy; do
	[ -x "$BIN/$b" ] || { echo "SKIP: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
tl_procs pdkv-kvc
export VLLM_HOST_IP=127.0.0.1 MC_TCP_BIND_ADDRESS=127.0.0.1

# scenarios: prefill flips one KV bit (--fault corrupt); V0 from 08-selftest-corrupt.json
python3 - "$T" <<'PY'
import json, sys
out = sys.argv[1]
base = json.load(open("scenarios/08-selftest-corrupt.json"))
def v0(name, stream, dargs, checks, expect=None):
    d = dict(base, name=name, decode_args=dargs, checks=checks)
    d["workload"] = dict(base["workload"], stream=stream, requests=3)
    d.pop("expect_fail", None)
    if expect:
        d["expect_fail"] = expect
    return d
def v1(name, vllm, stream, dargs, checks):
    return {"name": name, "vllm": vllm, "topology": base["topology"],
            "standin_args": base["standin_args"][:8], "prefill_args": ["--fault", "corrupt"],
            "decode_args": dargs, "checks": checks,
            "workload": {"requests": 3, "prompt_tokens": [100, 400, 64], "stream": stream,
                         "max_tokens": 12, "ignore_eos": True}}
for d in [v0("v0-default", False, [], ["http_ok", "output_equal"]),
          v0("v0-stream-off", True, ["--kv-integrity-policy", "off"], ["http_ok", "output_equal"],
             {"check": "output_equal"}),
          v0("v0-recompute", True, ["--kv-integrity-policy", "recompute", "--kv-miss-policy", "fail"],
             ["http_ok", "output_equal"]),
          v0("v0-fail", False, ["--kv-integrity-policy", "fail"], ["http_ok"],
             {"check": "http_ok", "match": "failed the decode's integrity check"}),
          v1("gen-a", "0.12", False, [], ["http_ok"]),
          v1("gen-b-recompute", "0.18", False, ["--kv-integrity-policy", "recompute"],
             ["http_ok", "output_equal"])]:
    json.dump(d, open(f"{out}/{d['name']}.json", "w"))
PY
"$BIN/pdkv-run" -v --workdir "$T/w" --json "$T/r.json" "$T"/v0-*.json "$T"/gen-*.json >"$T/out" 2>&1
rc=$?
grep -v '^# ' "$T/out"
check "pdkv run: every path as expected (exit $rc)" [ $rc = 0 ]
python3 - "$T/r.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["scenarios"]:
    q = s["requests"]
    print("  %-16s %s sent %d ok %d" % (s["name"], s["status"], q["sent"], q["ok"]))
    assert q["sent"] == 3 and q["ok"] == 0, (s["name"], q)   # every answer marked: none ok
PY
check "pdkv run's summary counts every marked answer as failed (V0 plain/streamed, gen A, gen B)" [ $? = 0 ]
check "V0, policy off: the text follows the bad KV" grep -q "v0-stream-off.*PASS" "$T/out"

# pdkv bench serve (streamed requests) on V0: the header counts as a failed request, exit 1
"$BIN/pdkv" bench serve "$T/v0-default.json" --num-prompts 4 --random-input-len 64 \
	--random-output-len 8 --ignore-eos --json "$T/b.json" >"$T/bout" 2>&1
rc=$?
check "bench serve: exit 1 with marked answers (got $rc)" [ $rc = 1 ]
check "bench serve: Failed requests: 4" grep -qE "^Failed requests: +4" "$T/bout"
check "bench serve JSON: failed 4" python3 -c "
import json,sys; r=json.load(open('$T/b.json'))['rows']
assert [x['value'] for x in r if x['metric']=='failed']==[4], r"

# pdkv run --external against stand-ins started here, gen B, prefill corrupting its KV
TCP='"kv_connector_extra_config":{"mooncake_protocol":"tcp"}'
GEOM=(--kv-layers 2 --kv-heads 2 --head-dim 32 --hidden-size 64 --ns-per-token 1000)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
standin() {
	local name=$1 port; shift
	"$BIN/pdkv-standin" --port 0 --host 127.0.0.1 --max-model-len 4096 "${GEOM[@]}" "$@" \
		>"$T/$name.log" 2>&1 &
	PIDS+=($!)
	port=$(tl_log_port "$T/$name.log" 200 health)
	[ -n "$port" ] || { cat "$T/$name.log"; echo "FAIL stand-in $name did not start"; exit 1; }
	eval "URL_$name=http://127.0.0.1:$port"
}
BB=$(tl_free_base)
VLLM_MOONCAKE_BOOTSTRAP_PORT=$BB standin p --vllm-version 0.18 --fault corrupt \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\",$TCP}"
VLLM_MOONCAKE_BOOTSTRAP_PORT=$((BB + 40)) standin d --vllm-version 0.18 \
	--kv-transfer-config "{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_consumer\",$TCP}"
XP=$(free_port)
"$BIN/pdkv-proxy" --host 127.0.0.1 --port "$XP" --contract mooncake --prefill "$URL_p" "$BB" \
	--decode "$URL_d" >"$T/x.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do curl -sf -o /dev/null "http://127.0.0.1:$XP/health" && break; sleep 0.05; done
"$BIN/pdkv-run" -v --json "$T/e.json" --external "prefill=$URL_p,decode=$URL_d,proxy=http://127.0.0.1:$XP" \
	scenarios/external/live-1p1d.json >"$T/eout" 2>&1
check "--external: the marked answers are not ok" python3 -c "
import json; q=json.load(open('$T/e.json'))['scenarios'][0]['requests']
print('  --external requests:', q); assert q['sent'] == 6 and q['ok'] == 0, q"
# some failed, some not (a plain stand-in failing after 4 requests): the exit follows the failures
# (no initial test run, which would be one of the 4)
standin f --fault fail-after=4
"$BIN/pdkv" bench serve --base-url "$URL_f" --num-prompts 6 --random-input-len 64 \
	--random-output-len 8 --max-concurrency 1 --ready-check-timeout-sec 0 >"$T/fout" 2>&1
rc=$?
check "bench serve with 2 of 6 failed: exit 1 ($rc), Failed requests: 2" \
	bash -c "[ $rc = 1 ] && grep -qE '^Failed requests: +2' '$T/fout' && grep -qE '^Successful requests: +4' '$T/fout'"
# a stream that ends cleanly after an error event (what pdkv-standin sends when the KV fails its
# check after the first token; pdkv-proxy passes it on without the trailer): counted as failed.
# A minimal server sends that exact stream, so the count does not hang on where the check lands.
python3 - "$T/sse.port" <<'PY' >"$T/sse.log" 2>&1 &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"index":0,"text":"a"}]}\n\n'
                         b'data: {"error":{"object":"error","message":"KV check failed",'
                         b'"type":"InternalServerError","param":null,"code":500}}\n\n'
                         b'data: [DONE]\n\n')
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/sse.port" ] && break; sleep 0.05; done
"$BIN/pdkv" bench serve --base-url "http://127.0.0.1:$(cat "$T/sse.port")" --num-prompts 2 \
	--random-input-len 16 --random-output-len 4 --max-concurrency 1 >"$T/sout" 2>&1
rc=$?
check "bench serve: a stream ending in an error event is a failed request (exit $rc)" \
	bash -c "[ $rc = 1 ] && grep -qE '^Failed requests: +2' '$T/sout'"
[ $fails = 0 ] || { tail -n 20 "$T/eout"; grep -E "requests:" "$T/fout" "$T/sout"; exit 1; }
echo "ok: X-PDKV-KV-Check on every path, counted as failed"
