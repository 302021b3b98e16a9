#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_accept: pdkv accept end to end — bad input (unknown --pairs, empty or one-line hosts file,
# no node source, refused bench flags) exits 2 naming the flag or file; then three network
# namespaces with node2's link limited by tc tbf: the matrix must name node2, and only node2, as
# the outlier, every pair through node2 slow, no pair between node1 and node3 slow, every byte
# checked, JSON and the gnuplot heatmap written. NOTRUN (77) without root / namespaces.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
A="$BIN/pdkv-accept"
[ -x "$A" ] || { echo "SKIP: $A not built"; exit 77; }
T=$(mktemp -d /tmp/pdkv-test-accept.XXXXXX)
trap 'rm -rf "$T"' EXIT
export MC_TCP_BIND_ADDRESS=127.0.0.1 VLLM_HOST_IP=127.0.0.1 # accept must not pass these into a node

# expect RC PATTERN ARGS...: pdkv accept ARGS exits RC and prints PATTERN
expect() {
	local rc=$1 pat=$2 got
	shift 2
	timeout 30 "$A" "$@" >"$T/out" 2>&1
	got=$?
	if [ "$got" -eq "$rc" ] && grep -q -- "$pat" "$T/out"; then
		ok "accept $* -> $rc, names \"$pat\""
	else
		bad "accept $*: want exit $rc and \"$pat\", got exit $got: $(head -c 300 "$T/out")"
	fi
}

: >"$T/empty.txt"
printf '# one machine only\nnodeA 198.18.0.9\n' >"$T/one.txt"
expect 2 '--pairs: expected all, ring or random:K' --netns 3 --pairs mesh
expect 2 '--pairs: expected all, ring or random:K' --netns 3 --pairs random:0
expect 2 "--hosts: $T/empty.txt: no hosts" --hosts "$T/empty.txt"
expect 2 "--hosts $T/one.txt: 1 host, expected at least 2" --hosts "$T/one.txt"
expect 2 '--hosts: ' --hosts "$T/missing.txt"
expect 2 'give exactly one of --hosts FILE, --slurm, --netns N' --pairs ring
expect 2 'give exactly one of --hosts FILE, --slurm, --netns N' --netns 3 --slurm
expect 2 '--block_size' --netns 3 -- --block_size=abc
expect 2 'pdkv accept sets it itself' --netns 3 -- --mode=target
expect 2 '--threshold' --netns 3 --threshold 1.5
expect 2 '--netns' --netns 1
command -v scontrol >/dev/null || expect 2 '--slurm: `scontrol show hostnames` is not installed' --slurm
expect 0 'random:K' --help

# three nodes, node2 behind a 200 Mbit/s link both ways; each pair 3 x 0.5 s, write, --check
timeout 120 "$A" --netns 3 --netns-slow node2=200mbit --pairs all --check --repeat 3 \
	--json "$T/acc.json" --plot "$T/acc.png" --workdir "$T/w" \
	-- --operation=write --block_size=64K --batch_size=16 --duration=0.5 >"$T/run" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	echo "SKIP: NOTRUN: $(grep -m1 NOTRUN "$T/run")"
	exit 77
fi
cat "$T/run"
check "slowed node: exit 1 (outliers), got $rc" [ $rc -eq 1 ]
check "progress line per pair and round" [ "$(grep -c '^round [1-3]/3 \[[1-6]/6\] node' "$T/run")" -eq 18 ]
check "the table names node2 as the outlier" grep -q '^OUTLIER node node2 ' "$T/run"
check "no other node named" [ "$(grep -c '^OUTLIER node ' "$T/run")" -eq 1 ]
python3 - "$T/acc.json" <<'PY' >"$T/py" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "OUTLIERS" and d["exit"] == 1, d["verdict"]
assert d["outliers"]["nodes"] == ["node2"], d["outliers"]
nodes = {n["name"]: n for n in d["nodes"]}
assert nodes["node2"]["state"] == "SLOW", nodes
assert nodes["node1"]["state"] == "ok" and nodes["node3"]["state"] == "ok", nodes
fleet = d["fleet_median"]
for p in d["pairs"]:
    assert p["wrong_bytes"] == 0 and p["failed_transfers"] == 0, p
    if "node2" in (p["initiator"], p["target"]):
        assert p["state"] == "SLOW" and p["bw_median"] < 0.5 * fleet, p
    else:  # healthy pair: fast, or too noisy to judge here, never an outlier
        assert p["state"] in ("ok", "UNCERTAIN"), p
assert len(d["matrix"]) == 3 and d["matrix"][1][1] is None
print("node2 %.1f MB/s vs fleet median %.1f" % (nodes["node2"]["best_pair"], fleet))
PY
check "JSON: node2 the one outlier, its pairs slow, others not, no wrong byte ($(tail -1 "$T/py"))" \
	grep -q '^node2 ' "$T/py"
if command -v gnuplot >/dev/null; then
	check "heatmap written" test -s "$T/acc.png"
fi
check "namespaces removed" bash -c "! ip netns list 2>/dev/null | grep -q 'pdkv-[0-9]*-node'"
[ $fails -eq 0 ] || { cat "$T/py"; echo "test_accept: $fails failed"; exit 1; }
echo "test_accept: all passed"
