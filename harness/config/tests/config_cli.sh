#!/usr/bin/env bash
# config_cli.sh: the `pdkv config check` / `pdkv ports` command-line contract — exit codes 0/1/2,
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
rm -f /tmp/pdkv-cli.$$.out /tmp/pdkv-cli.$$.err
echo "config_cli.sh: $fails failure(s)"
[ "$fails" = 0 ]
