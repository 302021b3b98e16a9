#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_lanes: pdkv bench's socket baseline opens as many connections as pdkv's TCP lanes
# (as iperf3 -P), with the same transfers in flight; the banner says how many lanes ran; both
# rows report CPU seconds per GB; every byte still checked.
set -u
B=${PDKV_BIN:-build/bin}/pdkv-bench
[ -x "$B" ] || { echo "SKIP: pdkv-bench not built"; exit 77; }
. ci/testlib.sh
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchlanes.XXXXXX)
trap 'rm -rf "$T"' EXIT
run() { # run LANES OUT ARGS...: a short loopback write with the socket baseline
	local l=$1 out=$2
	shift 2
	MC_TCP_LANES_PER_PEER=$l timeout 120 "$B" --mode=loopback --baseline=socket --protocol=tcp \
		--operation=write --block_size=65536 --duration=0.3 --check "$@" >"$out" 2>&1
}
run 4 "$T/a" --batch_size=8 --json="$T/a.json"
check "4 lanes: exit 0 (every byte checked)" [ $? = 0 ]
check "banner: pdkv 4 TCP connections" grep -q "^# lanes: pdkv 4 TCP connections to the target" "$T/a"
check "banner: socket baseline 4 connections" grep -q "^# lanes: socket baseline 4 connections, one thread each, as many as pdkv's lanes" "$T/a"
check "banner: the connections run in lockstep" grep -q "^# lanes: socket baseline 4 connections.*, in lockstep: a batch ends with its slowest connection" "$T/a"
check "the socket row opened 4 connections" grep -q "^# socket: 4 connections opened" "$T/a"
check "both rows report CPU s per GB" [ "$(grep -c '^# cpu: initiator .* s per GB moved' "$T/a")" = 2 ]
check "json: the socket row keeps pdkv's shape (batch 8, 1 thread, counted in batches of 8)" python3 - "$T/a.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
s = [r for r in rows if r["kind"] == "socket"][0]
assert s["batch_size"] == 8 and s["threads"] == 1 and s["wrong"] == 0, s
assert s["batches"] == s["transfers"] // 8 and s["transfers"] > 0, s
assert s["cpu_initiator_s"] > 0, s
PY
# Lockstep: the socket row's batch lasts until its slowest connection's part ends, as pdkv's
# batch waits for its slowest lane. The first connection sleeps 50 ms in each timed batch
# (a test-only knob); with the four connections in lockstep every batch of 8 x 64 KiB takes at
# least 50 ms (<= 0.0105 GB/s), and each connection ran as many batches as the others. Free
# running, the other three would move gigabytes a second.
PDKV_TEST_SOCK_LAG_MS=50 run 4 "$T/l" --batch_size=8 --json="$T/l.json"
check "lag on one connection: exit 0" [ $? = 0 ]
check "lag on one connection holds every batch of the socket row (lockstep)" python3 - "$T/l.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
s = [r for r in rows if r["kind"] == "socket"][0]
p = [r for r in rows if r["kind"] == "pdkv"][0]
assert s["transfers"] > 0 and s["GBps"] < 0.0106, s
assert s["transfers"] % 8 == 0 and s["batches"] * 8 == s["transfers"], s
assert p["GBps"] > 0.05, p  # the knob is the socket's alone
PY
# Two engine threads run their batches free of each other over the lanes, so the socket
# baseline's connections run free too: the lag holds only the first connection's share.
PDKV_TEST_SOCK_LAG_MS=50 run 2 "$T/f" --batch_size=4 --threads=2 --json="$T/f.json"
check "2 threads: exit 0" [ $? = 0 ]
check "2 threads: the banner does not say lockstep" sh -c "grep '^# lanes: socket baseline 2 connections' '$T/f' | grep -qv lockstep"
check "2 threads: the other connection runs free of the lagging one" python3 - "$T/f.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
s = [r for r in rows if r["kind"] == "socket"][0]
assert s["GBps"] > 0.05, s
PY
run 3 "$T/b" --batch_size=4
check "3 lanes, 4 in flight: 2 connections (3 does not divide 4)" grep -q "^# socket: 2 connections opened" "$T/b"
run 1 "$T/c" --batch_size=4 --threads=2
check "1 lane, 2 threads: the socket opens 1 connection too" grep -q "^# socket: 1 connection opened" "$T/c"
check "1 lane: the banner says so" grep -q "^# lanes: pdkv 1 TCP connection to the target" "$T/c"
[ "$fails" = 0 ] || { cat "$T/a"; exit 1; }
