#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_latency: pdkv bench --latency over TCP loopback — one request in flight, exactly
# --iterations timed requests per size, p50 <= p99 <= max in the table and the JSON rows, the
# default 8 B..64 KiB sizes, and the flags it cannot go with (exit 2 naming the flag).
set -u
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
B="$BIN/pdkv-bench"
export MC_TCP_BIND_ADDRESS=127.0.0.1 VLLM_HOST_IP=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchlat.XXXXXX)
trap 'rm -rf "$T"' EXIT

run() { timeout 60 "$B" --latency --iterations=50 --operation=write,read -b 8 -e 4096 -f 8 \
	--check --json="$T/lat.json" >"$T/out" 2>&1; }
check "--latency over tcp loopback exits 0" run
check "the table has p50/p99/max columns" grep -q 'p50(us) .*p99(us) .*max(us)' "$T/out"
check "one row per operation and size (2 x 4)" test "$(grep -cE '^  pdkv +(write|read) ' "$T/out")" = 8
check "the banner says requests per row, not seconds" grep -q 'latency: 50 requests per row' "$T/out"
check "JSON: 50 iterations, batch 1, p50 <= p99 <= max, nothing wrong or failed" python3 - "$T/lat.json" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "pdkv"]
assert len(rows) == 8, len(rows)
for r in rows:
    assert r["iterations"] == 50 and r["batch_size"] == 1 and r["threads"] == 1, r
    assert 0 < r["lat_p50_us"] <= r["lat_p99_us"] <= r["lat_max_us"], r
    assert r["wrong"] == 0 and r["failed"] == 0, r
assert sorted({r["block_size"] for r in rows}) == [8, 64, 512, 4096]
PY
check "default sizes 8 B .. 64 KiB (x2: 14 sizes)" bash -c "timeout 60 '$B' --latency --iterations=3 >'$T/def' 2>&1 && test \$(grep -cE '^  pdkv +read ' '$T/def') = 14 && grep -qE '^  pdkv +read +65536 ' '$T/def'"
for bad in "--baseline=socket" "--kv-geometry=2,2,64,2" "--scheme=pairwise"; do
	check "--latency with $bad: exit 2 naming it" bash -c "'$B' --latency $bad >'$T/bad' 2>&1; [ \$? = 2 ] && grep -q -- '${bad%%=*}' '$T/bad'"
done
check "--iterations=0: exit 2" bash -c "'$B' --latency --iterations=0 >/dev/null 2>&1; [ \$? = 2 ]"
[ "$fails" = 0 ]
