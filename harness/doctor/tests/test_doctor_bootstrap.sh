#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# pdkv doctor --bootstrap=URL (issue 34 N1): a registered worker that does not answer is a FAIL
# naming its rank and address; a bootstrap server bound to 0.0.0.0 is a WARN when the port also
# answers on a non-loopback address of this host (only with PDKV_TEST_WIDE_BIND=1); loopback
# only is OK.
set -u
B=${PDKV_BIN:-build/bin}
T=$(mktemp -d /tmp/pdkv-doctor-boot.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fails=0
expect() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
boot() { # boot HOST OUT -> port
	"$B/pdkv-bootstrap" --host "$1" --port 0 >"$2" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do
		p=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\) .*/\1/p' "$2")
		[ -n "$p" ] && { echo "$p"; return; }
		sleep 0.1
	done
}
P=$(boot 127.0.0.1 "$T/b1")
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$T/live" &
pids+=($!)
for _ in $(seq 50); do LIVE=$(cat "$T/live"); [ -n "$LIVE" ] && break; sleep 0.1; done
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
reg() { curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$1" "http://127.0.0.1:$P/register"; }
reg "{\"engine_id\":\"good\",\"dp_rank\":0,\"tp_rank\":0,\"pp_rank\":0,\"addr\":\"tcp://127.0.0.1:$LIVE\"}" >/dev/null
"$B/pdkv-doctor" --protocol=tcp --bootstrap="http://127.0.0.1:$P" >"$T/ok" 2>&1
cat "$T/ok" | grep bootstrap
expect "loopback-only server: OK exposure" "grep -q '^OK   bootstrap exposure' $T/ok"
expect "live worker: OK workers" "grep -q '^OK   bootstrap workers' $T/ok"
reg "{\"engine_id\":\"bogus\",\"dp_rank\":1,\"tp_rank\":0,\"pp_rank\":0,\"addr\":\"tcp://127.0.0.1:$DEAD\"}" >/dev/null
"$B/pdkv-doctor" --protocol=tcp --bootstrap="http://127.0.0.1:$P" >"$T/bad" 2>&1; rc=$?
cat "$T/bad" | grep -A1 bootstrap
expect "dead worker: FAIL naming rank and address" "grep -q \"^FAIL bootstrap workers .*dp rank 1 (engine bogus) tp rank 0: worker tcp://127.0.0.1:$DEAD does not answer\" $T/bad"
expect "exit 1 with a FAIL (rc=$rc)" "[ $rc = 1 ]"
# binding 0.0.0.0 leaves loopback: only when asked (PDKV_TEST_WIDE_BIND=1)
IP=
[ "${PDKV_TEST_WIDE_BIND:-0}" = 1 ] && IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
if [ -n "$IP" ]; then
	P2=$(boot 0.0.0.0 "$T/b2")
	"$B/pdkv-doctor" --protocol=tcp --bootstrap="http://127.0.0.1:$P2" >"$T/wide" 2>&1
	grep bootstrap "$T/wide"
	expect "0.0.0.0 server: WARN exposure naming $IP" "grep -q \"^WARN bootstrap exposure .*non-loopback address $IP\" $T/wide"
else
	echo "skip: the 0.0.0.0 exposure case (PDKV_TEST_WIDE_BIND=1 and a non-loopback IPv4 address)"
fi
[ $fails = 0 ]
