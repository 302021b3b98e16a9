#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_scheme_base: pdkv-bench --scheme with --baseline=socket / socket-only over loopback
# TCP with --check — the socket run in the same topology as the engine's (who pairs with whom,
# per-pair rows), the engine/socket ratio per point in the text, JSON and CSV, separate targets
# given as lists; the flags a scheme refuses exit 2 with a message that names flag and scheme.
set -u
B=${PDKV_BIN:-build/bin}/pdkv-bench
[ -x "$B" ] || { echo "SKIP: pdkv-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchbase.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
# shellcheck source=harness/bench/tests/scheme_lib.bash
. "$(dirname "$0")/scheme_lib.bash"

# jcheck NAME WHAT PY: PY asserts over rows (the JSON's), pdkv / sock (its rows of each kind) and
# d (the document). Every run here: socket rows mirror the engine's pairs, and each engine row
# carries the socket figures of its point (--repeat 1: the socket row run right before it).
jcheck() {
	check "$1: $2" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert rows, "no rows"
pdkv = [r for r in rows if r["kind"] == "pdkv"]
sock = [r for r in rows if r["kind"] == "socket"]
for r in rows:
    pp = r["per_pair"]
    assert r["pairs"] == len(pp) and r["wrong"] == 0 and r["failed"] == 0
    assert r["bytes"] == sum(p["bytes"] for p in pp), "aggregate = sum of pairs"
    assert r["bandwidth"] > 0 and all(p["bandwidth"] > 0 for p in pp)
for r in sock:
    assert "socket_bandwidth" not in r and "ratio_vs_socket" not in r
for r in pdkv:
    s = [x for x in sock if (x["operation"], x["block_size"], x["pairs"]) ==
         (r["operation"], r["block_size"], r["pairs"])]
    assert len(s) == 1, "one socket row per point"
    s = s[0]
    assert [(p["initiator"], p["target"]) for p in s["per_pair"]] == \
           [(p["initiator"], p["target"]) for p in r["per_pair"]], "same topology"
    assert s["batch_size"] == r["batch_size"] and s["threads"] == r["threads"]
    assert abs(r["socket_bandwidth"] - s["bandwidth"]) < 1e-9
    assert abs(r["ratio_vs_socket"] - r["bandwidth"] / s["bandwidth"]) < 1e-9
    for p, q in zip(r["per_pair"], s["per_pair"]):
        assert abs(p["socket_bandwidth"] - q["bandwidth"]) < 1e-9
        assert abs(p["ratio_vs_socket"] - p["bandwidth"] / q["bandwidth"]) < 1e-9
    x = [x for x in d["ratios_vs_socket"] if (x["operation"], x["block_size"], x["pairs"]) ==
         (r["operation"], r["block_size"], r["pairs"])]
    assert len(x) == 1 and x[0]["scheme"] == r["scheme"]
    assert abs(x[0]["ratio"] - r["ratio_vs_socket"]) < 1e-9
assert d["meta"]["baseline"] in ("socket", "socket-only")
'"$3" "$T/$1.json"
}

# manytoone, 2 initiators -> 1 target: socket rows first at each point, then the engine's
run m2o --scheme=manytoone --num-pairs=2 --baseline=socket --operation=write,read
jcheck m2o "socket then pdkv per point, 2 initiators -> target 0, ratio per point" '
assert [(r["kind"], r["operation"]) for r in rows] == [("socket", "write"), ("pdkv", "write"), ("socket", "read"), ("pdkv", "read")]
for r in rows:
    assert r["initiators"] == 2 and r["targets"] == 1
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (1, 0)]
assert len(d["ratios_vs_socket"]) == 2'
check "m2o: a ratio line per point" [ "$(grep -c '^# ratio pdkv/socket manytoone \(write\|read\) 16384 B, 2 pairs: .* = ' "$T/m2o.out")" = 2 ]
check "m2o: per-pair ratio lines" [ "$(grep -c '^# ratio pdkv/socket per pair (pdkv / socket): i0->t0 [0-9.]*, i1->t0 [0-9.]*$' "$T/m2o.out")" = 2 ]
check "m2o: socket per-pair rows" grep -q "^  spair1 write .* i1->t0$" "$T/m2o.out"
check "m2o: socket fairness lines" [ "$(grep -c '^# fairness socket manytoone' "$T/m2o.out")" = 2 ]
check "m2o: csv: engine rows carry socket bw and ratios, socket rows leave them empty" python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["kind"] for r in rows] == ["socket", "pdkv", "socket", "pdkv"]
for s, p in zip(rows[0::2], rows[1::2]):
    assert s["socket_bw_GB_per_s"] == s["ratio_vs_socket"] == s["pair_ratio_vs_socket"] == ""
    assert abs(float(p["socket_bw_GB_per_s"]) - float(s["bandwidth_GB_per_s"])) < 1e-3
    assert abs(float(p["ratio_vs_socket"]) - float(p["bandwidth_GB_per_s"]) / float(s["bandwidth_GB_per_s"])) < 1e-3
    assert len(p["pair_ratio_vs_socket"].split(";")) == 2' "$T/m2o.csv"

# pairwise sweep 1,2: each kind scales against its own first point
run pw --scheme=pairwise --num-pairs=1,2 --baseline=socket --operation=read
jcheck pw "pair i <-> i for both kinds, each kind scaled by its own 1-pair row" '
assert [(r["kind"], r["pairs"]) for r in rows] == [("socket", 1), ("pdkv", 1), ("socket", 2), ("pdkv", 2)]
for r in rows:
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(k, k) for k in range(r["pairs"])]
    base = [x for x in rows if x["kind"] == r["kind"] and x["pairs"] == 1][0]
    assert abs(r["scaling"] - r["bandwidth"] / base["bandwidth"]) < 1e-9'
check "pw: a socket scaling line and the engine's" [ "$(grep -c '^# scaling \(socket \)\?pairwise read 16384 B .* 1: .* = 1.00x | 2: ' "$T/pw.out")" = 2 ]

# onetomany, socket only: 1 initiator -> 2 targets, no engine rows
run o2m --scheme=onetomany --num-pairs=2 --baseline=socket-only --operation=write
jcheck o2m "socket-only: socket rows only, initiator 0 -> targets 0, 1" '
assert [r["kind"] for r in rows] == ["socket"] and not d["ratios_vs_socket"]
assert [(p["initiator"], p["target"]) for p in rows[0]["per_pair"]] == [(0, 0), (0, 1)]'
check "o2m: no ratio line without engine rows" bash -c "! grep -q '^# ratio' '$T/o2m.out'"

# tp: prefill TP 2 -> decode TP 1, head slices (4096-byte requests) through the sockets too
run tp21 --scheme=tp --tp-prefill=2 --tp-decode=1 --kv-geometry=4,4,64,2 --prompt-tokens=100 --baseline=socket --operation=write
jcheck tp21 "tp: the socket moves the same head slices on the same rank pairs" '
for r in rows:
    assert r["block_size"] == 4096 and r["batch_size"] == 56
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (1, 0)]'
check "tp21: rank labels in the per-pair ratio line" grep -q "^# ratio pdkv/socket per pair (pdkv / socket): P0->D0 [0-9.]*, P1->D0 [0-9.]*$" "$T/tp21.out"

# separate targets: the initiator takes --segment_id and --baseline_server lists, in one order
for k in 0 1; do
	"$B" --mode=target --baseline=socket --buffer_size=1M --ready_file="$T/ready$k" >"$T/target$k.log" 2>&1 &
	PIDS+=($!)
done
for k in 0 1; do for _ in $(seq 100); do [ -s "$T/ready$k" ] && break; sleep 0.1; done; done
SEGS=$(sed -n 1p "$T/ready0"),$(sed -n 1p "$T/ready1")
SOCKS=$(sed -n 2p "$T/ready0"),$(sed -n 2p "$T/ready1")
run init --mode=initiator --segment_id="$SEGS" --baseline_server="$SOCKS" --scheme=onetomany --num-pairs=2 --baseline=socket --operation=write,read
jcheck init "initiator mode: both kinds reach targets 0 and 1" '
assert [r["kind"] for r in rows] == ["socket", "pdkv", "socket", "pdkv"]
for r in rows:
    assert [(p["initiator"], p["target"]) for p in r["per_pair"]] == [(0, 0), (0, 1)]'
# shellcheck disable=SC2086
"$B" --mode=initiator --segment_id="$SEGS" --baseline_server="${SOCKS%%,*}" --scheme=onetomany --num-pairs=2 --baseline=socket $SHORT >"$T/few" 2>&1
rc=$?
check "initiator mode: one socket address for two targets -> exit 2" [ $rc = 2 ]
check "initiator mode: ... names --baseline_server and the count" grep -q -- "needs 2 socket addresses.*--baseline_server=H:P,H:P" "$T/few"
for p in "${PIDS[@]}"; do kill -TERM "$p"; done
for p in "${PIDS[@]}"; do wait "$p"; rc=$?; check "target $p: exit 0 after SIGTERM" [ $rc = 0 ]; done
PIDS=()

# refusals: exit 2; the message names the flag, the scheme and what to do instead
refuse() {
	local what=$1 want=$2; shift 2
	"$B" "$@" >"$T/bad" 2>&1
	local rc=$?
	check "refuse $what -> exit 2" [ $rc = 2 ]
	check "refuse $what -> says: $want" grep -q -- "$want" "$T/bad"
	[ $rc = 2 ] || cat "$T/bad"
}
refuse mooncake "--compare-mooncake is not supported with --scheme=manytoone: .*Run the single-pair comparison separately" \
	--scheme=manytoone --num-pairs=2 --compare-mooncake=/bin/true
refuse perftest "--compare-perftest is not supported with --scheme=tp: .*Run the single-pair comparison separately" \
	--scheme=tp --tp-prefill=2 --protocol=rdma --compare-perftest
refuse vram+socket "--baseline=socket moves host memory only: not with --scheme --use_vram" \
	--scheme=pairwise --num-pairs=2 --use_vram --baseline=socket

# --use_vram with a scheme: runs where CUDA is; here without a device it is a 77 that says why
# shellcheck disable=SC2086
"$B" --scheme=pairwise --num-pairs=2 --use_vram $SHORT >"$T/vram" 2>&1
rc=$?
if [ $rc = 77 ]; then
	check "vram without a device: says --use_vram and no CUDA device" grep -q -- "--use_vram: no CUDA device" "$T/vram"
else
	check "vram on a CUDA host: exit 0" [ $rc = 0 ]
fi
[ $fails = 0 ] || exit 1
