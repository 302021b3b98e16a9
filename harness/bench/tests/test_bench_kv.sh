#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_kv: pdkv-bench --kv-geometry — one batch is one prompt's block list (2 x layers
# buffers x runs), every byte checked over loopback TCP; usage errors exit 2.
set -u
B=${PDKV_BIN:-build/bin}/pdkv-bench
[ -x "$B" ] || { echo "SKIP: pdkv-bench not built"; exit 77; }
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchkv.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi; }
# 4 layers, 2 heads x 64 x 2 B, 16-token blocks: 4 KiB per block; 100 tokens = 7 blocks
timeout 60 "$B" --kv-geometry=4,2,64,2 --block-size=16 --prompt-tokens=100 --operation=write,read \
	--duration=0.3 --check --json="$T/a.json" >"$T/out" 2>&1
check "kv-geometry run exits 0" [ $? = 0 ]
check "whole prompt: 8 requests (4 layers x K,V) of 7 blocks x 4096 B" grep -q "write *28672 *8 " "$T/out"
check "--check: no wrong bytes" python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"]; assert r and all(x["wrong"]==0 and x["block_size"]==28672 and x["batch_size"]==8 for x in r)' "$T/a.json"
timeout 60 "$B" --kv-geometry=4,2,64,2 --prompt-tokens=100 --kv-run-blocks=2 --operation=write \
	--duration=0.3 --check >"$T/out2" 2>&1
check "runs of 2 blocks: 4 runs per buffer = 32 requests of 8192 B" grep -q "write *8192 *32 " "$T/out2"
"$B" --prompt-tokens=5 >/dev/null 2>&1; check "--prompt-tokens without --kv-geometry: exit 2" [ $? = 2 ]
"$B" --kv-geometry=4,2,64,3 >/dev/null 2>&1; check "dtype bytes 3: exit 2" [ $? = 2 ]
"$B" --kv-geometry=4,2,64,2 -b 1K -e 4K >/dev/null 2>&1; check "with a -b/-e sweep: exit 2" [ $? = 2 ]
[ $fails = 0 ] || { cat "$T/out"; exit 1; }
