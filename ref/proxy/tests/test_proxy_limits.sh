#!/usr/bin/env bash
# pdkv-proxy against a connection flood (issue 11 D6): slow connections from one address past
# --max-connections-per-client are refused at accept (logged) while another address is served;
# --max-connections holds the total; bad values exit 2. Loopback, bounded.
set -u
BIN=${PDKV_BIN:-build/bin}/pdkv-proxy
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
TMP=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
trap "" PIPE # writes to connections the server refused must not kill the script
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

"$BIN" --max-connections 0 >"$TMP/o" 2>&1; rc=$?
check "--max-connections 0 exits 2 (got $rc)" [ $rc -eq 2 ]
check "the message names the flag" grep -q -- "--max-connections: expected a whole number" "$TMP/o"
"$BIN" --help >"$TMP/o" 2>&1
check "--help documents --max-connections-per-client" grep -q -- "--max-connections-per-client N" "$TMP/o"

start() {
	"$BIN" --host 127.0.0.1 --port 0 --prefill http://127.0.0.1:9 --decode http://127.0.0.1:9 \
		"$@" >"$TMP/log" 2>&1 &
	PID=$!
	PORT=
	for _ in $(seq 200); do
		PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\);.*/\1/p' "$TMP/log" | head -1)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$TMP/log"; echo "FAIL proxy did not start"; exit 1; }
}
stop() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=; }
FLOOD=()
flood() {
	local fd
	for _ in $(seq "$1"); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || break
		printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le' >&$fd 2>/dev/null
		FLOOD+=("$fd")
	done
}
closed_count() {
	local n=0 fd line
	for fd in "${FLOOD[@]}"; do
		read -r -t 0.2 -u "$fd" line 2>/dev/null
		[ $? -eq 1 ] && n=$((n + 1))
	done
	echo $n
}
unflood() { local fd; for fd in "${FLOOD[@]}"; do exec {fd}>&-; done; FLOOD=(); }
health() { curl -sS -m 20 --interface "$1" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health"; }

start --max-connections 200 --max-connections-per-client 40
flood 120
sleep 0.5
n=$(closed_count)
check "flood past the per-client limit refused ($n of 120 closed, >= 70)" [ "$n" -ge 70 ]
c=$(health 127.0.0.2)
check "another address served during the flood (HTTP $c)" [ "$c" = 200 ]
check "refusal logged with its flag" grep -q "limit --max-connections-per-client 40" "$TMP/log"
unflood
stop

start --max-connections 30
flood 60
sleep 0.5
n=$(closed_count)
check "flood past the total limit refused ($n of 60 closed, >= 25)" [ "$n" -ge 25 ]
check "total refusal logged" grep -q "limit --max-connections 30" "$TMP/log"
unflood
sleep 0.5
c=$(health 127.0.0.2)
check "served again after the flood (HTTP $c)" [ "$c" = 200 ]
stop

[ $fails -eq 0 ] && echo "PASS test_proxy_limits" || echo "FAIL test_proxy_limits ($fails)"
[ $fails -eq 0 ]
