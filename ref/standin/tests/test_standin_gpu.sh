#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --kv-cache-device (KV blocks in GPU memory, sa_gpu.c) at startup: a bad value, the V0 pipe and a
# plain instance are refused naming the flag; without a CUDA device a V1 stand-in exits 1 naming
# the flag and the reason. With a GPU the end-to-end runs are the GPU tier's (make test-gpu).
set -u
B=${BUILD:-build}/bin/pdkv-standin
fails=0
expect() { # expect NAME RC PATTERN -- args...
	local name=$1 want=$2 pat=$3 out rc
	shift 4
	out=$(timeout 20 "$B" --port 0 "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" <<<"$out"; then
		echo "ok - $name"
	else
		echo "not ok - $name (rc $rc, want $want, pattern '$pat'): $(tail -2 <<<"$out")"
		fails=$((fails + 1))
	fi
}
V1P='{"kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_connector_extra_config":{"mooncake_protocol":"nvlink_intra"}}'
expect "plain instance refuses --kv-cache-device cuda" 2 "kv-cache-device cuda: GPU KV blocks are a V1" -- \
	--kv-cache-device cuda
expect "bad value names the flag" 1 "kv-cache-device: expected cpu, cuda or cuda:N" -- \
	--kv-cache-device gpu0 --kv-transfer-config "$V1P"
expect "--kv-cache-device cpu keeps host blocks (dry run)" 0 "protocol nvlink_intra" -- \
	--kv-cache-device cpu --dry-run --kv-transfer-config "$V1P"
expect "MLA has no GPU layout" 1 "no MLA layout" -- \
	--kv-cache-device cuda --kv-mla --kv-transfer-config "$V1P"
if ! "${BUILD:-build}/tests/test_te_gpu" >/dev/null 2>&1; then
	expect "no CUDA device: startup error naming the flag" 1 "kv-cache-device cuda:0: no CUDA device" -- \
		--kv-cache-device cuda:0 --kv-transfer-config "$V1P"
else
	expect "a device this process does not see" 1 "sees .* CUDA device" -- \
		--kv-cache-device cuda:1000 --kv-transfer-config "$V1P"
fi
[ "$fails" = 0 ] || exit 1
