#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_config_cli.sh: the `pdkv config check` / `pdkv ports` command-line contract — exit codes 0/1/2,
# --json = exactly one JSON object on one stdout line, MOONCAKE_CONFIG_PATH read like vLLM.
set -u
B=${PDKV_BIN:-build/bin}
FX=fixtures/config
fails=0
expect() { # expect RC DESCRIPTION -- command...
	local want=$1 what=$2; shift 3
	"$@" >/tmp/pdkv-cli.$$.out 2>/tmp/pdkv-cli.$$.err; local rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: $what: exit $rc, want $want: $*"; sed 's/^/    /' /tmp/pdkv-cli.$$.err | head -5
		fails=$((fails + 1))
	else
		echo "ok: $what (exit $rc)"
	fi
}
one_json() { # stdout of the last command is one line holding one JSON object
	local lines; lines=$(wc -l </tmp/pdkv-cli.$$.out)
	if [ "$lines" != 1 ] || [ "$(head -c1 /tmp/pdkv-cli.$$.out)" != "{" ]; then
		echo "FAIL: $1: --json printed $lines lines"; fails=$((fails + 1)); return
	fi
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert set(["ok","vllm","config","kv_transfer","ports","conflicts","diagnostics"]) <= set(o), o.keys(); print("   ", sys.argv[2], "vllm.error =", o["vllm"]["error"])' /tmp/pdkv-cli.$$.out "$1" ||
			{ echo "FAIL: $1: not the contract's JSON object"; fails=$((fails + 1)); }
	fi
}
unset MOONCAKE_CONFIG_PATH
expect 0 "help" -- "$B/pdkv" config check --help
expect 2 "no subcommand" -- "$B/pdkv" config
expect 2 "bad --vllm" -- "$B/pdkv" config check --vllm v2
expect 2 "bad --tp" -- "$B/pdkv" config check --tp 0
expect 2 "unknown flag" -- "$B/pdkv" ports --frobnicate
expect 2 "missing value" -- "$B/pdkv" ports --mooncake-config
for f in $FX/examples/*.json; do
	expect 0 "example $(basename "$f")" -- "$B/pdkv" config check --mooncake-config "$f" --tp 2
	expect 0 "ports example $(basename "$f")" -- "$B/pdkv" ports --mooncake-config "$f" --tp 2
done
expect 1 "env unset" -- "$B/pdkv" config check --json
one_json "env unset"
MOONCAKE_CONFIG_PATH=$FX/guide-rdma.json expect 0 "env set" -- "$B/pdkv" config check --json
one_json "env set"
MOONCAKE_CONFIG_PATH= expect 1 "env empty" -- "$B/pdkv" config check --json
one_json "env empty"
grep -q "No such file or directory: ''" /tmp/pdkv-cli.$$.out || { echo "FAIL: env empty: wrong error"; fails=$((fails + 1)); }
expect 1 "collision" -- "$B/pdkv" ports --mooncake-config $FX/localhost-vs-loopback.json --json
one_json "collision"
grep -q '"conflicts":\[{' /tmp/pdkv-cli.$$.out || { echo "FAIL: collision: no conflicts in JSON"; fails=$((fails + 1)); }
expect 1 "bad json" -- "$B/pdkv" config check --mooncake-config $FX/single-quotes.json
grep -q "^Errors" /tmp/pdkv-cli.$$.out || { echo "FAIL: human report lacks the Errors section"; fails=$((fails + 1)); }
expect 1 "kv-transfer invalid" -- "$B/pdkv" config check --mooncake-config $FX/guide-rdma.json --kv-transfer-config '{"kv_rank":1.5}' --json
one_json "kv-transfer invalid"
expect 0 "v1 ports" -- "$B/pdkv" ports --vllm v1 --kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer"}' --tp 2 --dp 2 --json
one_json "v1 ports"
# V1 releases: the version table, flags that contradict it, the random engine_id
KT='{"kv_connector":"MooncakeConnector","kv_role":"kv_producer"}'
expect 0 "list versions" -- "$B/pdkv" config check --list-versions
grep -q '^0.13 - 0.15 *a ' /tmp/pdkv-cli.$$.out || { echo "FAIL: --list-versions lacks the gen A row"; fails=$((fails + 1)); }
expect 2 "bad --vllm-version" -- "$B/pdkv" config check --vllm-version 0.x
expect 2 "release without a connector" -- "$B/pdkv" config check --vllm-version 0.10.2
grep -q "no connector pdkv emulates" /tmp/pdkv-cli.$$.err || { echo "FAIL: 0.10.2: no reason given"; fails=$((fails + 1)); }
expect 2 "--v1-shape on gen A" -- "$B/pdkv" config check --vllm-version 0.15 --v1-shape b0
expect 2 "bad --v1-shape" -- "$B/pdkv" ports --v1-shape a
expect 2 "--vllm v0 vs a V1 release" -- "$B/pdkv" config check --vllm v0 --vllm-version 0.16
expect 0 "gen B ports" -- "$B/pdkv" ports --vllm-version 0.17 --kv-transfer-config "$KT" --tp 2 --json
one_json "gen B ports"
grep -q 'random (49152-65535)' /tmp/pdkv-cli.$$.out || { echo "FAIL: gen B ports: no random ROUTER ports"; fails=$((fails + 1)); }
ids=$(for i in 1 2; do "$B/pdkv" config check --vllm v1 --kv-transfer-config "$KT" --json |
	grep -o '"engine_id":"[0-9a-f-]*"'; done | sort -u | wc -l)
[ "$ids" = 2 ] || { echo "FAIL: engine_id is not a fresh uuid4 per run ($ids distinct)"; fails=$((fails + 1)); }
expect 1 "zk:// aborts" -- "$B/pdkv" config check --mooncake-config $FX/ms-zk.json --json
grep -q '"error":"process abort (Mooncake LOG(FATAL)): Unable to find metadata storage plugin zk"' /tmp/pdkv-cli.$$.out ||
	{ echo "FAIL: zk: wrong vLLM verdict"; fails=$((fails + 1)); }
rm -f /tmp/pdkv-cli.$$.out /tmp/pdkv-cli.$$.err
echo "test_config_cli.sh: $fails failure(s)"
[ "$fails" = 0 ]
