#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_report: the pdkv report CLI — exit statuses (0 / 1 regression / 2 usage or bad file naming
# the file and field), tables in the three formats, missing rows, metadata warnings, run-JSON diff
# with a verdict change, history plots that are real PNG and SVG, and real pdkv bench JSON.
set -u
BIN=${PDKV_BIN:-build/bin}
R="$BIN/pdkv-report"
T=$(mktemp -d /tmp/pdkv-test-report.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && tail -30 "$T/out"; exit 1; }
[ -x "$R" ] || { echo "SKIP: $R not built"; exit 77; }

# bench JSON with one row of 5 repetitions: bench NAME THREADS LANES GB/s...
bench() {
  local f=$1 thr=$2 lanes=$3 rows="" sep=""
  shift 3
  for v in "$@"; do
    rows="$rows$sep{\"kind\":\"pdkv\",\"operation\":\"write\",\"block_size\":1048576,\"batch_size\":128,\"threads\":$thr,\"GBps\":$v}"
    sep=","
  done
  printf '{"tool":"pdkv-bench","protocol":"tcp","threads":%s,"meta":{"hostname":"h","threads":%s,"commit":"c%s","env":{"MC_TCP_LANES_PER_PEER":"%s"}},"rows":[%s,{"kind":"pdkv","operation":"read","block_size":65536,"batch_size":128,"threads":%s,"GBps":1}]}\n' \
    "$thr" "$thr" "$lanes" "$lanes" "$rows" "$thr" >"$f"
}
bench "$T/base.json" 1 1 10.0 10.1 9.9 10.05 9.95
bench "$T/same.json" 1 1 10.0 10.1 9.9 10.05 9.95
bench "$T/slow.json" 1 2 8.0 8.08 7.92 8.04 7.96
bench "$T/noisy.json" 1 1 11.5 8.7 10.9 9.1 9.6
bench "$T/thr2.json" 2 1 10.0 10.1 9.9 10.05 9.95

# usage and bad files: exit 2, the message names the file and the field
"$R" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "no arguments: want exit 2"
"$R" compare "$T/base.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "one file: want exit 2"
"$R" compare "$T/base.json" "$T/same.json" --threshold=abc >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --threshold: want 2"
grep -q -- "--threshold" "$T/out" || fail "bad --threshold: not named"
"$R" compare "$T/base.json" "$T/same.json" --alpha=2 >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --alpha: want 2"
"$R" compare "$T/nope.json" "$T/same.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "missing file: want 2"
grep -q "nope.json: cannot read" "$T/out" || fail "missing file: not named"
echo '{"rows":[{"kind":"pdkv","operation":"write","block_size":"big"}]}' >"$T/bad.json"
"$R" compare "$T/bad.json" "$T/same.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad field: want 2"
grep -q "bad.json: rows\[0\].block_size" "$T/out" || fail "bad field: file and field not named"
echo '{"tool": "pdkv-bench", "rows": "not rows"}' >"$T/strrows.json"
"$R" compare "$T/strrows.json" "$T/strrows.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bench rows a string: want 2"
grep -q "strrows.json: rows: expected an array, got a string" "$T/out" || fail "bench rows a string: not named"
echo '{"rows": [' >"$T/trunc.json"
"$R" diff "$T/base.json" "$T/trunc.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "truncated JSON: want 2"
grep -q "trunc.json: not valid JSON" "$T/out" || fail "truncated JSON: not said"

# identical -> "~", exit 0
"$R" compare "$T/base.json" "$T/same.json" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "identical: want exit 0, got $rc"
grep -Eq "pdkv write 1 MiB b128 t1 tcp +GB/s .* ~ +p=1.000 n=5\+5 +~" "$T/out" || fail "identical: no '~' row"
grep -q "too few samples" "$T/out" || fail "1-sample row: no 'too few samples'"
# 20 % slower with low noise -> REGRESSION, exit 1, and the lanes setting is warned about
"$R" compare "$T/base.json" "$T/slow.json" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "20% slower: want exit 1, got $rc"
grep -Eq "\-20\.0% +p=0\.008 n=5\+5 +REGRESSION" "$T/out" || fail "20% slower: no REGRESSION row with p=0.008"
grep -q "warning: env.MC_TCP_LANES_PER_PEER differs: old 1, new 2" "$T/out" || fail "no env warning"
grep -q "note: commit: c1 -> c2" "$T/out" || fail "commit change not noted"
# --threshold above the shift: said as worse, exit 0
"$R" compare "$T/base.json" "$T/slow.json" --threshold 25% >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "--threshold 25%: want exit 0, got $rc"
grep -q " worse" "$T/out" || fail "--threshold 25%: row not 'worse'"
# a shift smaller than the noise -> "~"
"$R" compare "$T/base.json" "$T/noisy.json" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "noisy: want exit 0, got $rc"
grep -Eq "GB/s .* ~ +p=[0-9.]+ n=5\+5 +~$" "$T/out" || fail "noisy: no '~'"
# 1 thread vs 2 threads: warned, rows paired with what differed
"$R" compare "$T/base.json" "$T/thr2.json" >"$T/out" 2>&1
grep -q "warning: threads differs: old 1, new 2" "$T/out" || fail "threads mismatch not warned"
grep -q "paired: threads 1 -> 2" "$T/out" || fail "threads mismatch: rows not paired with a note"

# --json and --markdown
"$R" compare "$T/base.json" "$T/slow.json" --json >"$T/cmp.json" 2>"$T/out"; rc=$?
[ $rc -eq 1 ] || fail "--json: want exit 1"
python3 - "$T/cmp.json" <<'PY' || fail "--json: wrong document"
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["rows"] if x["label"].startswith("pdkv write")][0]
assert r["verdict"] == "REGRESSION", r
assert abs(r["p_value"] - 2 / 252) < 1e-9, r
assert r["old"]["median"] == 10.0 and r["new"]["median"] == 8.0, r
assert d["summary"]["regressions"] == 1 and d["exit"] == 1 and d["min_samples"] == 4
assert any("MC_TCP_LANES_PER_PEER" in w for w in d["warnings"])
PY
"$R" compare "$T/base.json" "$T/slow.json" --markdown --json="$T/c2.json" >"$T/md" 2>&1
grep -q "^| row | metric | old | new | change | evidence | verdict |" "$T/md" || fail "--markdown: no table"
grep -q "\*\*REGRESSION\*\*" "$T/md" || fail "--markdown: regression not bold"
[ -s "$T/c2.json" ] || fail "--json=FILE not written"

# rows on one side only
sed 's/"operation":"read"/"operation":"write","x":1,"y":"read"/; s/"block_size":65536/"block_size":4096/' "$T/same.json" >"$T/other.json"
"$R" compare "$T/base.json" "$T/other.json" >"$T/out" 2>&1
grep -q "only old" "$T/out" && grep -q "only new" "$T/out" || fail "one-sided rows not listed"

# generic rows ({name, metric, samples|value, better}): TTFT up = worse
cat >"$T/s1.json" <<'EOF'
{"tool":"pdkv bench serve","rows":[{"name":"c8","metric":"ttft_p50","unit":"ms","better":"lower","samples":[100,101,99,100.5,99.5]}]}
EOF
sed 's/100,101,99,100.5,99.5/120,121,119,120.5,119.5/' "$T/s1.json" >"$T/s2.json"
"$R" compare "$T/s1.json" "$T/s2.json" >"$T/out" 2>&1; [ $? -eq 1 ] || fail "TTFT +20%: want exit 1"
grep -q "ttft_p50 (ms).*+20.0%.*REGRESSION" "$T/out" || fail "TTFT: no regression row"
"$R" compare "$T/s2.json" "$T/s1.json" >"$T/out" 2>&1; [ $? -eq 0 ] || fail "TTFT -17%: want exit 0"
grep -q "better" "$T/out" || fail "TTFT down: not 'better'"
"$R" compare "$T/s1.json" "$T/base.json" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "rows vs bench: want 2"

# pdkv run --json: a verdict change, a check change, a metric that moved, a new NOTRUN
run() { # run FILE STATUS_S1 KV_RESULT REUSED STATUS_S2
  printf '{"tool":"pdkv run","version":"0.1","host":{"hostname":"h"},"scenarios":[{"name":"s1","status":"%s","checks":[{"name":"kv_reused","result":"%s","expected_to_fail":false,"detail":"reused %s"}],"metrics":{"decode":{"pdkv_kv_reused_tokens_total":%s}},"requests":{"ok":3,"latency_p50_s":0.1}},{"name":"s2","status":"%s","checks":[]}]}\n' \
    "$2" "$3" "$4" "$4" "$5" >"$1"
}
run "$T/r1.json" PASS PASS 564 PASS
run "$T/r2.json" PASS PASS 564 PASS
run "$T/r3.json" FAIL FAIL 0 NOTRUN
"$R" diff "$T/r1.json" "$T/r2.json" >"$T/out" 2>&1; [ $? -eq 0 ] || fail "run diff identical: want 0"
grep -q "0 regressions.*0 verdicts worse, 0 new NOTRUN" "$T/out" || fail "run diff identical: summary"
"$R" diff "$T/r1.json" "$T/r3.json" >"$T/out" 2>&1; [ $? -eq 1 ] || fail "run diff PASS->FAIL: want 1"
grep -Eq "^s1 +\(scenario\) +PASS +FAIL +worse" "$T/out" || fail "run diff: scenario verdict change not listed"
grep -Eq "^s1 +kv_reused +PASS +FAIL +worse +reused 0" "$T/out" || fail "run diff: check change not listed"
grep -Eq "^s2 +\(scenario\) +PASS +NOTRUN +worse" "$T/out" || fail "run diff: new NOTRUN not listed"
grep -q "pdkv_kv_reused_tokens_total.*-100.0%.*too few samples (n=1+1)" "$T/out" || fail "run diff: a failed scenario's count is no verdict"
grep -q "1 new NOTRUN" "$T/out" || fail "run diff: NOTRUN count"
# a scenario that passes both times but reuses half the tokens: a count of a steady workload
run "$T/r4.json" PASS PASS 282 PASS
"$R" diff "$T/r1.json" "$T/r4.json" >"$T/out" 2>&1; [ $? -eq 1 ] || fail "run diff reused tokens halved: want 1"
grep -Eq "pdkv_kv_reused_tokens_total +564 +282 +-50.0% +count +REGRESSION" "$T/out" || fail "run diff: reused tokens drop not a REGRESSION"
"$R" diff "$T/r3.json" "$T/r1.json" --json >"$T/d.json" 2>&1; [ $? -eq 0 ] || fail "run diff FAIL->PASS: want 0"
grep -q '"better":[[:space:]]*true' "$T/d.json" || fail "run diff --json: no better verdict"

# issue 33: two `pdkv run --json` of one commit (5 scenarios, run back to back on a busy 2-core
# host; fixtures/) differ by noise only: 0 regressions, exit 0; single-value latencies are "too
# few samples", never a verdict; histogram bucket sums are not compared at all
F=$(dirname "$0")/fixtures
"$R" diff "$F/run-same-commit-1.json" "$F/run-same-commit-2.json" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "same-commit run diff: want exit 0, got $rc"
grep -q "^0 regressions" "$T/out" || fail "same-commit run diff: not 0 regressions"
grep -Eq "^1p1d-tcp-etcd requests +latency_p50_s .*too few samples \(n=1\+1\)" "$T/out" ||
  fail "same-commit run diff: a moved single-value latency is not 'too few samples (n=1+1)'"
grep -q "REGRESSION" "$T/out" && fail "same-commit run diff: a REGRESSION row"
grep -q "_bucket" "$T/out" && fail "same-commit run diff: a histogram bucket sum compared"

# history: two runs in the history layout, one plot per series as PNG and SVG, an index
mkdir -p "$T/h/20260101T100000Z-aaa1111" "$T/h/20260102T100000Z-bbb2222"
cp "$T/base.json" "$T/h/20260101T100000Z-aaa1111/bench.json"
cp "$T/slow.json" "$T/h/20260102T100000Z-bbb2222/bench.json"
cp "$T/r1.json" "$T/h/20260102T100000Z-bbb2222/run.json"
"$R" history "$T/nodir" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "history of a missing dir: want 2"
"$R" history "$T/h" --out "$T/plots" >"$T/out" 2>&1; rc=$?
[ $rc -eq 77 ] && { cat "$T/out"; echo "SKIP: gnuplot missing"; exit 77; }
[ $rc -eq 0 ] || fail "history: exit $rc"
n=0
for png in "$T"/plots/*.png; do
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$png: not a PNG"
  svg=${png%.png}.svg
  python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith("svg") else 1)' "$svg" ||
    fail "$svg: not SVG XML"
  n=$((n + 1))
done
[ $n -ge 2 ] || fail "history: expected plots for 2 bench series, got $n"
[ -f "$T/plots/bw-write-1048576-128-1-tcp-cpu.png" ] || fail "history: no bandwidth plot for write 1 MiB"
grep -q "bw-write-1048576-128-1-tcp-cpu.png" "$T/plots/index.md" || fail "index.md does not show the plot"
grep -q '<img src="bw-write-1048576-128-1-tcp-cpu.png"' "$T/plots/index.html" || fail "index.html does not show the plot"
grep -q "| s1 | - | PASS |" "$T/plots/index.md" || fail "index.md: no verdict table for the run file"
grep -q "^1	01-02 10:00 bbb2222	8	7.92	8.08" "$T/plots/bw-write-1048576-128-1-tcp-cpu.dat" || fail "history data: median/min/max"

# without gnuplot: 77 with the reason, data and index still written
PATH=/nonexistent "$R" history "$T/h" --out "$T/nogp" >"$T/out" 2>&1; rc=$?
[ $rc -eq 77 ] || fail "history without gnuplot: want 77, got $rc"
grep -q "gnuplot not found" "$T/out" || fail "history without gnuplot: reason not said"
[ -s "$T/nogp/index.md" ] && ls "$T"/nogp/*.dat >/dev/null 2>&1 || fail "history without gnuplot: no index/data"

# --history DIR: a row gates only beyond the prediction bound of its medians over the earlier
# runs kept in DIR (at least 3; runs whose own comparison found a regression left out)
rows() { # FILE v1 v2 v3 v4 v5: one higher-is-better row
  printf '{"tool":"t","rows":[{"name":"r","metric":"x socket","better":"higher","samples":[%s,%s,%s,%s,%s]}]}\n' \
    "$2" "$3" "$4" "$5" "$6" >"$1"
}
H=$T/hist
for r in 20260101T000000Z-a:1.00 20260102T000000Z-b:0.85; do
  mkdir -p "$H/${r%%:*}"
  v=${r#*:}
  rows "$H/${r%%:*}/bench.json" "$v" "$v" "$v" "$v" "$v"
done
rows "$T/old.json" 1.05 1.04 1.06 1.05 1.05
rows "$T/new.json" 0.80 0.81 0.79 0.80 0.80
rows "$T/bad.json" 0.50 0.51 0.49 0.50 0.50
"$R" compare "$T/old.json" "$T/new.json" >"$T/out" 2>&1; [ $? -eq 1 ] || fail "-24% without --history: want exit 1"
"$R" compare "$T/old.json" "$T/new.json" --history "$H" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "--history of 2 runs: want exit 0 (not gated), got $rc"
grep -q "worse.*not gated: 2 earlier runs in $H have this row, 3 needed" "$T/out" || fail "--history of 2 runs: reason not said"
mkdir -p "$H/20260103T000000Z-c" && cp "$T/old.json" "$H/20260103T000000Z-c/bench.json"
"$R" compare "$T/old.json" "$T/new.json" --history "$H" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "-20% within 3 x a 10% run-to-run spread: want exit 0, got $rc"
# the prediction bound for one row, 3 runs: t(0.95; 2) x sqrt(4/3) = 2.920 x 1.155 = 3.37 sd
# on the log scale: geometric mean 0.9628, sd of the logs 0.1106 -> 1 - exp(-3.37 x 0.1106) = 31.1 %
grep -q "not gated: -16.9% from the geometric mean of 3 earlier runs, within 31.1% (3.37 x their run-to-run spread of 11.1% on a log scale" "$T/out" ||
  fail "within the spread: reason not said"
grep -q "gate: also beyond the prediction bound of each row over the earlier runs in $H, .* (3 read" "$T/out" || fail "--history: footer"
"$R" compare "$T/old.json" "$T/bad.json" --history "$H" --json >"$T/cmp.json" 2>"$T/out"; rc=$?
[ $rc -eq 1 ] || fail "-50% beyond 3 x the spread: want exit 1, got $rc"
python3 - "$T/cmp.json" <<'PY' || fail "--history JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["history"]["runs"] == 3 and d["history"]["min_runs"] == 3, d["history"]
r = d["rows"][0]
assert r["verdict"] == "REGRESSION" and r["history"]["runs"] == 3, r
h = r["history"]
assert h["scale"] == "log", h
assert abs(h["mean"] - 0.96280) < 1e-4 and abs(h["spread_pct"] - 11.064) < 0.01, h
assert abs(h["k"] - 3.3717) < 1e-3 and abs(h["gate_pct"] - 31.14) < 0.01, h
PY
# a run whose comparison found a regression is left out; runs after NEW's own run do not count
mkdir -p "$H/20260104T000000Z-d" "$H/20260106T000000Z-f" "$H/20260105T000000Z-e"
cp "$T/bad.json" "$H/20260104T000000Z-d/bench.json"
echo '{"tool":"pdkv report","summary":{"regressions":1}}' >"$H/20260104T000000Z-d/compare.json"
cp "$T/bad.json" "$H/20260106T000000Z-f/bench.json"
cp "$T/new.json" "$H/20260105T000000Z-e/bench.json"
"$R" compare "$T/old.json" "$H/20260105T000000Z-e/bench.json" --history "$H" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "history with a left-out regression run: want exit 0, got $rc"
grep -q "(3 read, the last 10 count; 1 left out as regressions" "$T/out" || fail "left-out run not said"
grep -q "from the geometric mean of 3 earlier runs" "$T/out" || fail "a later run or a regression run counted"
# a noisy history (medians 1.00, 0.55, 1.35: 45 % apart run to run) put the linear bound at
# 152 % below the mean, where no collapse can reach; on the log scale a pdkv 95 % slower gates
H2=$T/noisy
for r in 20260101T000000Z-a:1.00 20260102T000000Z-b:0.55 20260103T000000Z-c:1.35; do
  mkdir -p "$H2/${r%%:*}"
  v=${r#*:}
  rows "$H2/${r%%:*}/bench.json" "$v" "$v" "$v" "$v" "$v"
done
rows "$T/collapse.json" 0.05 0.051 0.049 0.05 0.05
"$R" compare "$T/old.json" "$T/collapse.json" --history "$H2" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$T/out"; fail "-95% after a noisy history: want exit 1 (REGRESSION), got $rc"; }
grep -Eq "^r +x socket .* REGRESSION" "$T/out" || fail "-95% after a noisy history: no REGRESSION"
rows "$T/dip.json" 0.60 0.61 0.59 0.60 0.60
"$R" compare "$T/old.json" "$T/dip.json" --history "$H2" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "-43% within a noisy history's spread: want exit 0, got $rc"
grep -q "not gated: .* from the geometric mean of 3 earlier runs" "$T/out" || fail "dip in a noisy history: reason not said"
"$R" compare "$T/old.json" "$T/new.json" --history "$T/nope" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--history missing dir: want 2"
grep -q "history $T/nope: not a directory" "$T/out" || fail "--history missing dir: not said"
"$R" history "$H" --history "$H" >"$T/out" 2>&1; [ $? -eq 2 ] || fail "history --history: want 2"

# real pdkv bench JSON: samples per row, meta, compares with itself
B="$BIN/pdkv-bench"
if [ -x "$B" ]; then
  export MC_TCP_BIND_ADDRESS=127.0.0.1
  MC_TCP_LANES_PER_PEER=1 "$B" --operation=write --block_size=64K --batch_size=8 --duration=0.1 --repeat=4 \
    --baseline=socket --json "$T/b1.json" >"$T/out" 2>&1 || fail "pdkv-bench run failed"
  python3 - "$T/b1.json" <<'PY' || fail "bench JSON lacks samples/meta"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["meta"]
for k in ("version", "commit", "hostname", "kernel", "cpus", "protocol", "batch_size", "threads", "memory", "repeat"):
    assert k in m, k
assert m["env"]["MC_TCP_LANES_PER_PEER"] == "1"
rows = [r for r in d["rows"] if r["kind"] == "pdkv"]
assert len(rows) == 4 and [r["repetition"] for r in rows] == [1, 2, 3, 4]
assert all(len(r["samples"]["GBps"]) == 4 for r in rows)
assert rows[2]["samples"]["GBps"][2] == rows[2]["GBps"]
for k in ("bandwidth", "GBps", "lat_p50_us", "wrong", "cpu_initiator_s"):  # old keys kept
    assert k in rows[0], k
PY
  "$R" compare "$T/b1.json" "$T/b1.json" >"$T/out" 2>&1; [ $? -eq 0 ] || fail "bench vs itself: want 0"
  grep -Eq "pdkv write 64 KiB b8 t1 tcp +GB/s .* n=4\+4 +~" "$T/out" || fail "bench vs itself: no '~' row"
  # the interleaved socket/pdkv pairs give a per-repetition ratio row
  grep -Eq "pdkv/socket write 64 KiB b8 t1 tcp +x socket .* n=4\+4 +~" "$T/out" || fail "bench: no pdkv/socket ratio row"
  mkdir -p "$T/h2/20260101T000000Z-x"
  cp "$T/b1.json" "$T/h2/20260101T000000Z-x/bench.json"
  "$R" history "$T/h2" >"$T/out" 2>&1 || fail "history of a real bench run failed"
  [ -f "$T/h2/plots/ratio-write-65536-8-1-tcp-cpu-0.png" ] || fail "history: no ratio plot for a run with a socket baseline"
fi
echo "test_report.sh: ok"
