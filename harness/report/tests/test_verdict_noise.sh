#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_verdict_noise: issue 33's proof that `make bench`'s gate (ci/bench.sh, on by default) is
# sound: runs of one commit, a CPU hog beside one, give no REGRESSION and exit 0; pdkv made
# slower alone (PDKV_TEST_SLOWDOWN_PCT, a test-only knob the socket baseline never sees) is a
# REGRESSION of its pdkv/socket ratio and fails the run once the history holds the 3 earlier
# runs that tell each ratio's run-to-run spread, and is reported without failing before that;
# PDKV_BENCH_GATE=0 reports it without failing. Small shape (batch 8, 0.1 s rows, 8
# interleaved pairs), 8 runs: ~80 s on 2 cores.
set -u
BIN=${PDKV_BIN:-build/bin}
BUILD=$(cd "$BIN/.." && pwd)
T=$(mktemp -d /tmp/pdkv-test-verdict.XXXXXX)
HOG=
cleanup() {
  [ -n "$HOG" ] && kill "$HOG" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/log" ] && tail -40 "$T/log"; exit 1; }
[ -x "$BIN/pdkv-bench" ] && [ -x "$BIN/pdkv-report" ] || { echo "SKIP: pdkv-bench/pdkv-report not built"; exit 77; }

export BUILD PDKV_BENCH_OUT=$T/out PDKV_BENCH_HISTORY=$T/hist PDKV_BENCH_SERVE=0
export PDKV_BENCH_DURATION=0.1 PDKV_BENCH_REPEAT=8 PDKV_BENCH_BATCH=8 MC_TCP_BIND_ADDRESS=127.0.0.1
# On 2 cores a CPU hog moves pdkv's and the socket's figures unequally (a CI run saw the 64 KiB
# READ ratio go 0.54 -> 0.38, p = 0.003): such a host needs a wider threshold, and the 4x
# slowdown below (-75 %) is still far beyond it.
export PDKV_BENCH_THRESHOLD=45
unset PDKV_BENCH_GATE PDKV_TEST_SLOWDOWN_PCT MOONCAKE_BENCH
bench() { bash ci/bench.sh >"$T/log" 2>&1; }
last_compare() { ls -d "$T"/hist/2*/ | sort | tail -n 1; }

# 1. the first run: nothing to compare with
bench || fail "first run: exit $?"
grep -q "first run in" "$T/log" || fail "first run: not said"

# 2. pdkv ten times as slow, one earlier run: reported, not gated (the run-to-run spread of
#    the ratios is not known yet), exit 0; then dropped from the history
PDKV_TEST_SLOWDOWN_PCT=900 bench || fail "slowed pdkv, 1 earlier run: want exit 0, got $?"
grep -Eq "^pdkv/socket .* x socket .* worse +\(not gated: 1 earlier run in $T/hist has this row, 3 needed" "$T/log" ||
  fail "slowed pdkv, 1 earlier run: not reported as not gated for want of history"
rm -rf "$(last_compare)"

# 3. three more quiet runs of the same commit: 4 earlier runs from now on
for i in 2 3 4; do bench || fail "quiet run $i: exit $?"; done

# 4. the same commit again, with a CPU hog beside it: pdkv and the socket both slow down, the
#    pdkv/socket ratio of each interleaved pair holds -> no REGRESSION, exit 0
yes >/dev/null &
HOG=$!
bench
rc=$?
kill "$HOG"
wait "$HOG" 2>/dev/null
HOG=
[ $rc -eq 0 ] || fail "same commit beside a CPU hog: want exit 0, got $rc"
grep -Eq "^0 regressions beyond 45% \(alpha 0.05, Holm over 4 gated rows" "$T/log" ||
  fail "same commit beside a CPU hog: not '0 regressions' over the 4 ratio rows"
grep -Eq "^pdkv/socket write 64 KiB b8 t1 tcp +x socket .* n=8\+8 " "$T/log" ||
  fail "same commit: no pdkv/socket row with 8+8 samples"
grep -q "^gate: also beyond the prediction bound of each row over the earlier runs in $T/hist, .* (4 read" "$T/log" ||
  fail "same commit: the history's runs not said"

# 5. pdkv alone ten times as slow (-90 %, ln 10 = 2.3 on the log scale the bound is judged on:
#    beyond the prediction bound of 5 runs, 3.8 sd, unless the runs' ratios spread more than
#    60 %; a CI run saw them spread 28-43 %), gate off: the REGRESSION is reported, exit 0
PDKV_BENCH_GATE=0 PDKV_TEST_SLOWDOWN_PCT=900 bench || fail "slowed pdkv, PDKV_BENCH_GATE=0: want exit 0, got $?"
grep -Eq "^pdkv/socket .* x socket .* REGRESSION" "$T/log" || fail "slowed pdkv, gate off: no pdkv/socket REGRESSION"
grep -q "not gated: PDKV_BENCH_GATE=0" "$T/log" || fail "slowed pdkv, gate off: not said"
python3 - "$(last_compare)compare.json" <<'PY' || fail "compare.json: wrong verdicts"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit"] == 1 and d["summary"]["regressions"] >= 1, d["summary"]
assert d["history"]["runs"] == 5, d["history"]
for r in d["rows"]:
    k = r["label"].split()[0]
    if k == "socket":  # the baseline is never a regression
        assert r["verdict"] != "REGRESSION", r
    # a pdkv row slower beyond the threshold is left to its pdkv/socket ratio; within it (the
    # previous run may itself have been slowed by the hog of step 4) it is just "worse"
    if k == "pdkv" and r["verdict"] == "worse" and r["change_pct"] < -45:
        assert "pdkv/socket" in r.get("not_gated", ""), r
    if k == "pdkv/socket" and r["verdict"] == "REGRESSION":
        assert r["history"]["runs"] == 5, r
PY

# 6. the same slowdown with the gate on (the default): exit 1. The run of step 5 was a
#    regression: it is neither the run compared with nor part of the spread, so a slowdown
#    that stays keeps failing
PDKV_TEST_SLOWDOWN_PCT=900 bench
rc=$?
[ $rc -eq 1 ] || fail "slowed pdkv, gate on: want exit 1, got $rc"
grep -q "(5 read, the last 10 count; 1 left out as regressions" "$T/log" ||
  fail "slowed pdkv, gate on: the regression run of step 5 not left out of the spread"
grep -q "skipped as regressions: 1 run" "$T/log" || fail "slowed pdkv, gate on: compared with the regression run"
grep -Eq "^pdkv/socket .* x socket .* REGRESSION" "$T/log" || fail "slowed pdkv, gate on: no pdkv/socket REGRESSION"
grep -q "REGRESSION: pdkv is significantly slower" "$T/log" || fail "slowed pdkv, gate on: not said"
grep -q "FAILED: pdkv-bench exited" "$T/log" && fail "slowed pdkv: blamed on pdkv-bench"
echo "test_verdict_noise.sh: ok"
