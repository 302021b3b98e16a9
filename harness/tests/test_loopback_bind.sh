#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run's local scenarios and a plain pdkv bench bind and announce loopback (issue 34, N11):
# each role's topology address (127.0.0.x) for transfer engines and side channels, not the
# host's first non-loopback address (get_ip()).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-run" ] && [ -x "$BIN/pdkv-standin" ] || { echo "SKIP: binaries not built"; exit 77; }
T=$(mktemp -d /tmp/pdkv-lo.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# unset what would be "the user asking" for another address
env -u VLLM_HOST_IP -u MC_TCP_BIND_ADDRESS "$BIN/pdkv-run" --keep --workdir "$T/w" \
	scenarios/16-v1-gen-b0-1p1d.json >"$T/out" 2>&1 || { cat "$T/out"; fail "the scenario failed"; }
grep -q 'segment 127\.0\.0\.2:' "$T/w/v1-gen-b0-1p1d/prefill.log" || fail "prefill does not announce its topology address 127.0.0.2"
grep -q 'segment 127\.0\.0\.3:' "$T/w/v1-gen-b0-1p1d/decode.log" || fail "decode does not announce its topology address 127.0.0.3"
other=$(grep -rhoE '\b([0-9]{1,3}\.){3}[0-9]{1,3}:[0-9]+' "$T/w" | grep -v '^127\.' | grep -v '^0\.0\.0\.0:' | sort -u)
[ -z "$other" ] || fail "non-loopback addresses in the logs: $other"
echo "ok   a local gen-B scenario binds and announces its loopback topology addresses only"

# a plain pdkv bench (loopback mode) binds and announces 127.0.0.1 as well
[ -x "$BIN/pdkv-bench" ] || fail "pdkv-bench not built"
env -u VLLM_HOST_IP -u MC_TCP_BIND_ADDRESS "$BIN/pdkv-bench" --protocol=tcp --duration=0.2 \
	--block_size=4096 --json="$T/b.json" >"$T/bout" 2>&1 || { cat "$T/bout"; fail "pdkv bench failed"; }
grep -qE 'segment[^0-9]*127\.0\.0\.1:[0-9]+' "$T/bout" "$T/b.json" || grep -q '127\.0\.0\.1:[0-9]' "$T/b.json" ||
	fail "pdkv bench does not use 127.0.0.1"
other=$(grep -hoE '\b([0-9]{1,3}\.){3}[0-9]{1,3}:[0-9]+' "$T/bout" "$T/b.json" | grep -v '^127\.' | sort -u)
[ -z "$other" ] || fail "pdkv bench announces non-loopback addresses: $other"
echo "ok   a plain pdkv bench binds and announces 127.0.0.1"
