#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole-header deadline of pdkv's libmicrohttpd servers (issue 34, D6): clients that trickle
# one header line at a time (slowloris) are cut within PDKV_HTTP_HEADER_TIMEOUT_MS on the
# metaserver, the stand-in and the proxy, while a normal client is served. Loopback, bounded.
set -u
B=${PDKV_BIN:-build/bin}
for b in pdkv-metaserver pdkv-standin pdkv-proxy; do
	[ -x "$B/$b" ] || { echo "SKIP: $B/$b not built"; exit 77; }
done
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server
trap "" PIPE
export PDKV_HTTP_HEADER_TIMEOUT_MS=1500
N=24

# N connections: the request line, then a header line every 0.4 s
trickle_start() {
	local fd
	for i in $(seq $N); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || break
		printf 'GET /health HTTP/1.1\r\nHost: x\r\n' >&$fd 2>/dev/null
		FLOOD+=("$fd")
	done
}
trickle_for() { # $1 rounds of one line each on every connection
	for r in $(seq "$1"); do
		for fd in "${FLOOD[@]}"; do printf 'X-Slow-%d: y\r\n' "$r" >&$fd 2>/dev/null; done
		sleep 0.4
	done
}

one() { # WHAT URL-PATH: the flood is cut within the deadline and a normal client is served
	local what=$1 path=$2 n c
	trickle_start
	trickle_for 8 # 3.2 s: past the 1.5 s deadline, each gap far below the idle timeout
	n=$(tl_closed_count)
	check "$what: trickled headers cut ($n of ${#FLOOD[@]} closed)" [ "$n" -eq "${#FLOOD[@]}" ]
	c=$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$path")
	check "$what: a normal client answered (HTTP $c)" [ "$c" != 000 ]
	check "$what: the cut is logged naming the variable" \
		grep -q "PDKV_HTTP_HEADER_TIMEOUT_MS" "$TMP/log"
	tl_unflood
	tl_stop
}

tl_start metaserver "$B/pdkv-metaserver" --host 127.0.0.1 --port 0
one metaserver /health
tl_start standin "$B/pdkv-standin" --model m --port 0 --host 127.0.0.1 --max-model-len 100
one standin /health
tl_start proxy "$B/pdkv-proxy" --host 127.0.0.1 --port 0 --prefill http://127.0.0.1:9 \
	--decode http://127.0.0.1:9
one proxy /health

[ $fails -eq 0 ] && echo "PASS test_mhd_header_deadline" || echo "FAIL test_mhd_header_deadline ($fails)"
[ $fails -eq 0 ]
