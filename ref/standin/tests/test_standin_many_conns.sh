#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv-standin with more than FD_SETSIZE (1024) connections open: the HTTP server must poll, not
# select(), or every connection whose fd is past 1024 is reset without a word (seen at 1,000
# concurrent requests through the proxy). Loopback, about 1,100 idle connections, bounded.
set -u
BIN=${PDKV_BIN:-build/bin}/pdkv-standin
[ -x "$BIN" ] || { echo "SKIP: $BIN not built"; exit 77; }
ulimit -n 4096 2>/dev/null || { echo "SKIP: cannot raise the open-file limit to 4096"; exit 77; }
. "$(dirname "$0")/../../../ci/testlib.sh"
tl_one_server
trap "" PIPE

tl_start standin "$BIN" --model m --port 0 --host 127.0.0.1 --max-model-len 1000 \
	--ns-per-token 1000 --max-connections 3000 --max-connections-per-client 3000 --idle-timeout 60
U=http://127.0.0.1:$PORT
tl_flood 1100 "$PORT"
check "1100 idle connections opened (${#FLOOD[@]})" [ "${#FLOOD[@]}" -eq 1100 ]
sleep 0.5
c=$(curl -sS -m 20 -o "$TMP/body" -w '%{http_code}' "$U/v1/completions" \
	-H 'Content-Type: application/json' -d '{"model":"m","prompt":"hello","max_tokens":3}')
check "a completion past fd 1024 is served (HTTP $c)" [ "$c" = 200 ]
tl_unflood
tl_stop
[ $fails -eq 0 ]
