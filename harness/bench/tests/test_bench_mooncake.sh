#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_mooncake: pdkv-bench --compare-mooncake measures the Mooncake child itself — its CPU
# from wait4's rusage (not pdkv's own process), its latency "not measured" (JSON null), never
# 0.00 — with a stand-in for transfer_engine_bench that burns CPU and prints its closing line.
set -u
B=${PDKV_BIN:-build/bin}/pdkv-bench
[ -x "$B" ] || { echo "SKIP: pdkv-bench not built"; exit 77; }
. ci/testlib.sh
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchmc.XXXXXX)
trap 'rm -rf "$T"' EXIT
# The stand-in: Mooncake's flags in, a fixed amount of CPU work (in a child it waits for, as a
# real bench's threads would be counted), glog's "Test completed" line out.
cat >"$T/transfer_engine_bench" <<'FAKE'
#!/bin/bash
echo "$@" >>"${0%/*}/args"
awk 'BEGIN { for (i = 0; i < 6000000; i++) s += i * 0.5; print "work", s > "/dev/null" }'
times >"${0%/*}/times" # its own CPU: the shell's and the awk's, user and system
echo "I1204 19:00:00.000000  4242 transfer_engine_bench.cpp:412] Test completed: duration 1.00, batch count 50, throughput 0.01 GB/s"
FAKE
chmod +x "$T/transfer_engine_bench"
timeout 120 "$B" --mode=loopback --protocol=tcp --metadata_server=P2PHANDSHAKE --operation=write \
	--block_size=65536 --batch_size=4 --duration=0.3 --compare-mooncake="$T/transfer_engine_bench" \
	--json="$T/b.json" >"$T/out" 2>&1
check "pdkv-bench with the stand-in exits 0" [ $? = 0 ]
# what the stand-in says it used (bash `times`: "0m0.010s 0m0.002s" for itself, then its children)
alone=$(tr ' ' '\n' <"$T/times" | sed -n 's/^\([0-9]*\)m\([0-9.]*\)s$/\1 \2/p' |
	awk '{t += $1 * 60 + $2} END {printf "%.3f", t}')
check "the stand-in got Mooncake's initiator flags" grep -q -- "--mode=initiator --operation=write .*--block_size=65536 --batch_size=4" "$T/args"
check "text: the Mooncake row's latency columns say -" grep -Eq '^  mooncake write +65536 +4 +1 +[0-9.]+ +[0-9]+ +- +- ' "$T/out"
check "text: Mooncake's CPU from its process (wait4), latency not measured" grep -Eq '^# cpu: Mooncake initiator [0-9.]+ s \(its process, wait4\).*latency not measured' "$T/out"
check "text: no 0.00 s Mooncake CPU" bash -c "! grep -q '^# cpu: Mooncake initiator 0.00 s' '$T/out'"
check "json: the Mooncake row's CPU is the child's (>= 90 % of the $alone s it reports), latency null" \
	python3 - "$T/b.json" "$alone" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "mooncake"]
alone = float(sys.argv[2])
assert len(rows) == 1, rows
r = rows[0]
print("mooncake row: cpu_initiator_s", r["cpu_initiator_s"], "alone", alone, "lat", r["lat_p50_us"])
assert r["cpu_initiator_s"] >= 0.9 * alone - 0.01 and r["cpu_initiator_s"] > 0.05, r
assert r["lat_p50_us"] is None and r["lat_p99_us"] is None, r
assert r["batches"] == 50 and r["bytes"] == 50 * 4 * 65536, r
PY
grep -E "mooncake|cpu|ratio" "$T/out"
[ "$fails" = 0 ] || { cat "$T/out"; exit 1; }
