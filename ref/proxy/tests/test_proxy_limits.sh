#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv-proxy against a connection flood (issue 11 D6): slow connections from one address past
# --max-connections-per-client are refused at accept (logged) while another address is served;
# --max-connections holds the total; bad values exit 2. Loopback, bounded.
set -u
BIN=${PDKV_BIN:-build/bin}/pdkv-proxy
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server
trap "" PIPE # writes to connections the server refused must not kill the script

"$BIN" --max-connections 0 >"$TMP/o" 2>&1; rc=$?
check "--max-connections 0 exits 2 (got $rc)" [ $rc -eq 2 ]
check "the message names the flag" grep -q -- "--max-connections: expected a whole number" "$TMP/o"
"$BIN" --help >"$TMP/o" 2>&1
check "--help documents --max-connections-per-client" grep -q -- "--max-connections-per-client N" "$TMP/o"

start() {
	tl_start proxy "$BIN" --host 127.0.0.1 --port 0 --prefill http://127.0.0.1:9 \
		--decode http://127.0.0.1:9 "$@"
}
health() { curl -sS -m 20 --interface "$1" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health"; }

start --max-connections 200 --max-connections-per-client 40
tl_flood 120 "$PORT"
sleep 0.5
n=$(tl_closed_count)
check "flood past the per-client limit refused ($n of 120 closed, >= 70)" [ "$n" -ge 70 ]
c=$(health 127.0.0.2)
check "another address served during the flood (HTTP $c)" [ "$c" = 200 ]
check "refusal logged with its flag" grep -q "limit --max-connections-per-client 40" "$TMP/log"
tl_unflood
tl_stop

start --max-connections 30
tl_flood 60 "$PORT"
sleep 0.5
n=$(tl_closed_count)
check "flood past the total limit refused ($n of 60 closed, >= 25)" [ "$n" -ge 25 ]
check "total refusal logged" grep -q "limit --max-connections 30" "$TMP/log"
tl_unflood
sleep 0.5
c=$(health 127.0.0.2)
check "served again after the flood (HTTP $c)" [ "$c" = 200 ]
tl_stop

[ $fails -eq 0 ] && echo "PASS test_proxy_limits" || echo "FAIL test_proxy_limits ($fails)"
[ $fails -eq 0 ]
