#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libmicrohttpd servers out of file descriptors (issue 34, N6): under ulimit -n 64 a connection
# flood made pdkv-proxy print ~13,000 "Too many open files" lines a second. Now each server
# (proxy, stand-in, metaserver) logs MHD's messages through pd_log at most once a second with a
# count, backs off, and still answers once the flood is gone. Loopback, bounded.
set -u
B=${PDKV_BIN:-build/bin}
for b in pdkv-proxy pdkv-standin pdkv-metaserver; do
	[ -x "$B/$b" ] || { echo "SKIP: $B/$b not built"; exit 77; }
done
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

flood() { # PORT N SECONDS: N connections held open for SECONDS
	python3 - "$@" <<'PY'
import socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
held = []
for _ in range(n):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=0.3))
    except OSError:
        pass
time.sleep(secs)
PY
}

one() { # NAME HEALTH-PATH CMD...
	local name=$1 path=$2 lines c
	shift 2
	(ulimit -n 64 && exec "$@") >"$TMP/log" 2>&1 &
	PID=$!
	PORT=$(tl_log_port "$TMP/log")
	[ -n "$PORT" ] || { cat "$TMP/log"; bad "$name did not start"; return; }
	flood "$PORT" 150 2
	lines=$(grep -c 'Too many open files\|resource limit' "$TMP/log")
	check "$name: out-of-fd lines rate-limited ($lines in ~2 s, <= 6)" [ "$lines" -le 6 ]
	check "$name: out of fds said through pd_log" grep -q 'WARN  libmicrohttpd: .*Too many open files' "$TMP/log"
	c=$(curl -sS -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$path")
	check "$name: answers after the flood (HTTP $c)" [ "$c" = 200 ]
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
	# the count of the rest: on the next line a second later, or, for a burst that ended
	# within its first second (a loaded host), on a last line at exit
	check "$name: the count of the rest" \
		grep -q 'more messages in the last second left out\|more messages left out since the last one' "$TMP/log"
}

one pdkv-proxy /health "$B/pdkv-proxy" --host 127.0.0.1 --port 0 --prefill http://127.0.0.1:9 \
	--decode http://127.0.0.1:9
one pdkv-standin /health "$B/pdkv-standin" --host 127.0.0.1 --port 0
one pdkv-metaserver /dump "$B/pdkv-metaserver" --host 127.0.0.1 --port 0 \
	--max-connections 400 --max-connections-per-client 400
[ "$fails" -eq 0 ] && echo "all checks passed"
exit $((fails > 0))
