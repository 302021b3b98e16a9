#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv-proxy never dies silently (issue 34: in a gen B soak it exited with nothing in its log):
# 300 streamed clients hanging up mid-answer (RST and FIN) leave it serving; SIGPIPE is ignored;
# SIGTERM stops it cleanly; any other signal that ends it (HUP, USR1, SEGV, ABRT) is named in its
# log. Loopback, bounded (about 10-20 s).
set -u
B=${PDKV_BIN:-build/bin}
for b in pdkv-proxy pdkv-standin; do
	[ -x "$B/$b" ] || { echo "SKIP: $B/$b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server
SPID=
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

# a plain stand-in is both prefill and decode (v0 contract); slow tokens keep streams open
"$B/pdkv-standin" --host 127.0.0.1 --port 0 --ns-per-token 2000000 >"$TMP/standin.log" 2>&1 &
SPID=$!
SP=$(tl_log_port "$TMP/standin.log" 200 health)
[ -n "$SP" ] || { cat "$TMP/standin.log"; echo "FAIL stand-in did not start"; exit 1; }

M=Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 # the stand-in's default served name
# handle_segv=0: under make asan, ASan's own SIGSEGV handler would report and exit 1 before the
# proxy's handler could log the signal (ignored by builds without ASan)
start_proxy() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" "$B/pdkv-proxy" \
		--host 127.0.0.1 --port 0 --prefill "http://127.0.0.1:$SP" \
		--decode "http://127.0.0.1:$SP" >"$TMP/log" 2>&1 &
	PID=$!
	PORT=$(tl_log_port "$TMP/log")
	[ -n "$PORT" ] || { cat "$TMP/log"; echo "FAIL proxy did not start"; exit 1; }
}

# ended_by PID: HOW = "signal N" or "exit N" once the process is gone (waits up to 10 s)
ended_by() {
	local rc
	for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
	wait "$1" 2>/dev/null
	rc=$?
	if [ $rc -gt 128 ]; then HOW="signal $((rc - 128))"; else HOW="exit $rc"; fi
}

start_proxy
python3 - "$PORT" "$M" <<'PY' >"$TMP/hangups" 2>&1
import json, socket, struct, sys, threading
port = int(sys.argv[1])
body = json.dumps({"model": sys.argv[2], "prompt": "hello " * 40, "max_tokens": 400, "stream": True})
req = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode()
got = [0]
lock = threading.Lock()
def one(i):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(req)
    data = b""
    while b"data: " not in data:       # the first piece of the answer
        d = s.recv(4096)
        if not d:
            break
        data += d
    if i % 2:                           # half hang up hard (RST), half with a FIN
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    with lock:
        got[0] += b"data: " in data
for wave in range(3):                   # 3 waves of 100 concurrent hang-ups
    ts = [threading.Thread(target=one, args=(wave * 100 + i,)) for i in range(100)]
    [t.start() for t in ts]
    [t.join() for t in ts]
print("streams cut after their first piece:", got[0])
PY
cut=$(sed -n 's/.*first piece: //p' "$TMP/hangups")
check "300 clients hung up mid-stream (RST and FIN) after their first piece (got ${cut:-none})" [ "${cut:-0}" = 300 ]
check "proxy alive after 300 mid-answer hang-ups" kill -0 "$PID"
kill -PIPE "$PID"
sleep 0.2
check "SIGPIPE is ignored: proxy alive" kill -0 "$PID"
curl -sf -m 10 -o /dev/null -H 'Content-Type: application/json' \
	-d "{\"model\":\"$M\",\"prompt\":\"hi\",\"max_tokens\":2}" "http://127.0.0.1:$PORT/v1/completions"
check "proxy still answers a completion" [ $? = 0 ]
kill -TERM "$PID"
ended_by "$PID"
PID=
check "SIGTERM: clean stop ($HOW), logged" bash -c "[ '$HOW' = 'exit 0' ] && grep -q 'Terminated: stopping' '$TMP/log'"

for sig in HUP USR1 SEGV ABRT; do
	start_proxy
	kill -"$sig" "$PID"
	ended_by "$PID"
	PID=
	num=$(kill -l "$sig")
	check "SIG$sig ends it ($HOW) and its log names it" \
		bash -c "[ '$HOW' = 'signal $num' ] && grep -q 'ERROR killed by signal $num (SIG$sig), pid' '$TMP/log'"
done

[ "$fails" = 0 ] || { tail -n 5 "$TMP/log" "$TMP/hangups"; echo "$fails check(s) failed"; exit 1; }
