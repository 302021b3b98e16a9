#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_scheme: pdkv-bench --scheme over loopback TCP with --check — pairwise sweep with
# scaling, manytoone, onetomany, tp (prefill/decode spelling and nixlbench's) with --kv-geometry:
# who pairs with whom, per-pair rows, fairness, JSON/CSV fields; bad values exit 2 naming the flag.
set -u
B=${PDKV_BIN:-build/bin}/pdkv-bench
[ -x "$B" ] || { echo "SKIP: pdkv-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchscheme.XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=harness/bench/tests/scheme_lib.bash
. "$(dirname "$0")/scheme_lib.bash"

# jcheck NAME WHAT PY: PY asserts over rows = the JSON's rows (its per_pair lists)
jcheck() {
	check "$1: $2" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert rows, "no rows"
for r in rows:
    pp = r["per_pair"]
    assert r["pairs"] == len(pp), "pairs counted"
    assert r["wrong"] == 0 and r["failed"] == 0 and all(p["wrong"] == 0 for p in pp)
    assert 0 < r["fairness_jain"] <= 1.000001 and 0 < r["fairness_min_max"] <= 1.000001
    assert r["pair_bandwidth_min"] <= r["pair_bandwidth_max"]
    assert r["bytes"] == sum(p["bytes"] for p in pp), "aggregate = sum of pairs"
    assert r["kind"] == "pdkv" and "samples" in r
'"$3" "$T/$1.json"
}

# pairwise: 1 and 2 pairs, both operations; scaling relative to 1 pair
run pw --scheme=pairwise --num-pairs=1,2 --operation=write,read
jcheck pw "4 rows, pair i <-> i, scaling 1.0 at 1 pair" '
assert [(r["operation"], r["pairs"]) for r in rows] == [("write", 1), ("write", 2), ("read", 1), ("read", 2)]
for r in rows:
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(k, k) for k in range(r["pairs"])]
    assert r["scheme"] == "pairwise" and r["scaling_base_pairs"] == 1 and r["scaling"] > 0
    assert r["pairs"] != 1 or abs(r["scaling"] - 1) < 1e-9
assert d["scheme"] == "pairwise" and d["meta"]["scheme"] == "pairwise"'
check "pw: per-pair rows in the table" grep -q "^  pair1  write .* i1->t1$" "$T/pw.out"
check "pw: one fairness line per row" [ "$(grep -c '^# fairness pairwise' "$T/pw.out")" = 4 ]
check "pw: a scaling line per operation" [ "$(grep -c '^# scaling pairwise .* 1: .* = 1.00x | 2: ' "$T/pw.out")" = 2 ]
check "pw: transfer_engine_bench's line per aggregate only" [ "$(grep -c '^Test completed' "$T/pw.out")" = 4 ]
check "pw: csv header gains the scheme columns" grep -q ",scheme,pairs,initiators,targets,pair_bw_min,pair_bw_max,fairness_min_max,fairness_jain,scaling,pair_bw,socket_bw_GB_per_s,ratio_vs_socket,pair_ratio_vs_socket$" "$T/pw.csv"
check "pw: csv rows carry them (2 pair bandwidths ;-joined)" python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4 and all(r["scheme"] == "pairwise" for r in rows)
assert [len(r["pair_bw"].split(";")) for r in rows] == [1, 2, 1, 2]' "$T/pw.csv"

# manytoone: 3 initiator engines -> 1 target (disjoint windows of its buffer)
run m2o --scheme=manytoone --num-pairs=3 --operation=write,read
jcheck m2o "3 initiators -> target 0" '
for r in rows:
    assert r["initiators"] == 3 and r["targets"] == 1
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (1, 0), (2, 0)]'

# onetomany: 1 initiator engine -> 2 targets
run o2m --scheme=onetomany --num-pairs=2 --operation=write,read
jcheck o2m "initiator 0 -> targets 0, 1" '
for r in rows:
    assert r["initiators"] == 1 and r["targets"] == 2
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (0, 1)]'

# tp: prefill TP 2 -> decode TP 1 with a KV geometry of 4 heads; read = the decode rank pulls
# its heads from both prefill ranks, write = both prefill ranks push; unequal TP moves one head
# slice per block: 4 layers x K,V x 7 blocks = 56 requests of 16 tokens x 2 heads x 64 x 2 B
run tp21 --scheme=tp --tp-prefill=2 --tp-decode=1 --kv-geometry=4,4,64,2 --prompt-tokens=100 --operation=write,read
jcheck tp21 "P2 -> D1: write 2 prefill initiators, read 1 decode initiator" '
w, r_ = rows
assert w["operation"] == "write" and [(p["initiator"], p["target"]) for p in w["per_pair"]] == [(0, 0), (1, 0)]
assert r_["operation"] == "read" and [(p["initiator"], p["target"]) for p in r_["per_pair"]] == [(0, 0), (0, 1)]
for r in rows:
    assert r["tp_prefill"] == 2 and r["tp_decode"] == 1 and r["block_size"] == 4096 and r["batch_size"] == 56'
check "tp21: rank labels in the table" grep -q "D0<-P1$" "$T/tp21.out"
# equal TP: rank i <-> i, whole blocks of its heads (the kv run of 7 blocks, half the heads)
run tp22 --scheme=tp --tp-prefill=2 --tp-decode=2 --kv-geometry=4,4,64,2 --prompt-tokens=100 --operation=read
jcheck tp22 "P2 -> D2: i <-> i, 8 requests of 7 blocks of 2 heads" '
for r in rows:
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (1, 1)]
    assert r["block_size"] == 7 * 16 * 2 * 64 * 2 and r["batch_size"] == 8'
# nixlbench's spelling: fixed roles, 1 initiator rank serves 2 target ranks (head slices)
run tpnx --scheme=tp --num_initiator_dev=1 --num_target_dev=2 --num_threads=2 --operation=write
jcheck tpnx "nixlbench spelling: 1 initiator -> 2 targets, 2 threads each" '
for r in rows:
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (0, 1)]
    assert r["threads"] == 2 and r["block_size"] == 8192 and "tp_prefill" not in r'

# bad values: exit 2, the message names the flag
bad() {
	local flag=$1; shift
	"$B" "$@" >"$T/bad" 2>&1
	local rc=$?
	check "bad $* -> exit 2" [ $rc = 2 ]
	check "bad $* -> names $flag" grep -q -- "$flag" "$T/bad"
}
bad --scheme --scheme=foo
bad --num-pairs --num-pairs=0
bad --num-pairs --num-pairs=2,x
bad --num-pairs --scheme=tp --num-pairs=2
bad --tp-prefill --scheme=tp --tp-prefill=3 --tp-decode=2
bad --tp-prefill --tp-prefill=2
bad --kv-geometry --scheme=tp --tp-prefill=8 --kv-geometry=4,4,64,2
bad --num_target_dev --scheme=manytoone --num_target_dev=2
bad --segment_id --mode=initiator --segment_id=127.0.0.1:9 --scheme=onetomany --num-pairs=2
[ $fails = 0 ] || exit 1
