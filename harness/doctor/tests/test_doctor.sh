#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_doctor.sh — pdkv doctor on this host: readable lines and --json, a clear verdict on RDMA
# (FAIL with the fix when rdma is wanted and absent), metadata server reachable / unreachable
# (real pdkv-metaserver), a port the config needs already taken. Needs $PDKV_BIN.
set -u
B=${PDKV_BIN:-build/bin}
T=$(mktemp -d /tmp/pdkv-doctor.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fails=0
expect() { # expect DESC COND
	if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

# 1. plain run: one line per check, verdict line, exit 0 iff no FAIL
"$B/pdkv-doctor" >"$T/out" 2>&1; rc=$?
cat "$T/out"
expect "verdict line" "grep -qE '^doctor: [0-9]+ OK, [0-9]+ WARN, [0-9]+ FAIL$' $T/out"
nfail=$(grep -c '^FAIL' "$T/out")
expect "exit 1 iff a check FAILs (rc=$rc, $nfail FAIL)" "[ \$(( nfail > 0 )) = $rc ]"
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	expect "no RDMA: FAIL rdma devices with the fix" "grep -q '^FAIL rdma devices' $T/out && grep -q 'protocol \"tcp\"' $T/out"
	"$B/pdkv-doctor" --protocol=tcp >"$T/tcp" 2>&1
	expect "no RDMA with --protocol=tcp: only a WARN" "grep -q '^WARN rdma devices' $T/tcp"
fi

# 2. --json parses and carries the same counts
"$B/pdkv-doctor" --json --protocol=tcp >"$T/json" 2>/dev/null
expect "--json has checks[] and counts" "grep -q '\"checks\"' $T/json && grep -q '\"fail\":' $T/json"

# 3. metadata server: a live pdkv-metaserver is OK, a closed port is FAIL
ms_start() { # ms_start OUTFILE -> sets port
	"$B/pdkv-metaserver" --host 127.0.0.1 --port 0 >"$1" 2>/dev/null &
	pids+=($!)
	port=
	for _ in $(seq 50); do
		port=$(grep -oE '127.0.0.1:[0-9]+' "$1" | head -1 | cut -d: -f2)
		[ -n "$port" ] && break
		sleep 0.1
	done
}
ms_start "$T/ms"
"$B/pdkv-doctor" --protocol=tcp --metadata_server="http://127.0.0.1:$port/metadata" >"$T/m1" 2>&1
expect "metadata server up -> OK" "grep -q '^OK   metadata server' $T/m1"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null; pids=()
"$B/pdkv-doctor" --protocol=tcp --metadata_server="http://127.0.0.1:$port/metadata" >"$T/m2" 2>&1; rc=$?
expect "metadata server down -> FAIL, exit 1" "grep -q '^FAIL metadata server' $T/m2 && [ $rc = 1 ]"
expect "metadata server down -> 'nothing listens' with the start command" \
	"grep -q \"nothing listens on 127.0.0.1:$port\" $T/m2 && grep -q 'fix: start the HTTP metadata server' $T/m2"
# etcd not running at the address: say so and how to start it, not connection-string syntax
"$B/pdkv-doctor" --protocol=tcp --metadata_server="127.0.0.1:$port" >"$T/m3" 2>&1; rc=$?
grep -A1 'metadata server' "$T/m3"
expect "etcd down -> nothing listens on 127.0.0.1:$port: start etcd" \
	"grep -q '^FAIL metadata server .*nothing listens on 127.0.0.1:$port' $T/m3 && grep -q 'fix: start etcd (.etcd --listen-client-urls http://127.0.0.1:$port' $T/m3 && [ $rc = 1 ]"
expect "etcd down -> no connection-string syntax advice" "! grep -q 'use etcd://h:p' $T/m3"
"$B/pdkv-doctor" --protocol=tcp --metadata_server="etcd+x://127.0.0.1:$port" >"$T/m4" 2>&1
expect "bad scheme -> the syntax advice" "grep -q 'fix: use etcd://h:p' $T/m4"
"$B/pdkv-doctor" --protocol=bogus >"$T/bad" 2>&1; rc=$?
expect "bad --protocol -> exit 2 with the expected values" "[ $rc = 2 ] && grep -q 'expected rdma or tcp' $T/bad"

# 4. a port the config binds (V0 pipe: prefill B+9) is already taken -> FAIL naming it
ms_start "$T/ms2"
busy=$port
cat >"$T/mooncake.json" <<J
{"prefill_url": "127.0.0.1:$((busy - 9))", "decode_url": "127.0.0.1:$((busy + 991))",
 "metadata_server": "P2PHANDSHAKE", "metadata_backend": "etcd", "protocol": "tcp", "device_name": ""}
J
"$B/pdkv-doctor" --mooncake-config="$T/mooncake.json" --vllm=v0 >"$T/c" 2>&1
grep -E 'config|port' "$T/c"
expect "config read" "grep -q 'mooncake config' $T/c"
expect "taken port $busy reported with its purpose" "grep -q \"^FAIL port .*$busy (prefill\" $T/c"
# without --vllm (as the README shows it) the V0 pipe ports are checked too
"$B/pdkv-doctor" --mooncake-config="$T/mooncake.json" --protocol=tcp >"$T/c2" 2>&1; rc=$?
grep -E 'port' "$T/c2"
expect "no --vllm: taken V0 port $busy reported, exit 1" \
	"grep -q \"^FAIL port .*$busy (vLLM V0 prefill v0 zmq data PUSH\" $T/c2 && [ $rc = 1 ] && ! grep -q '^OK   ports' $T/c2"

echo "test_doctor: $fails failure(s)"
exit $fails
