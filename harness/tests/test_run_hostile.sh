#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hostile suite (scenarios/hostile/, what `make run-hostile` runs): killed and restarted
# nodes, cut links, rogue peers and floods, kept out of the default suite so `make run` stays
# quick. Every scenario PASS or NOTRUN, --json that parses, no process of the run left behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-run" ] || { echo "SKIP: $BIN/pdkv-run not built"; exit 77; }
T=$(mktemp -d /tmp/pdkv-hostile.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for o in "$T"/out*; do echo "--- output ($o):"; cat "$o"; done; exit 1; }

n=$(ls scenarios/hostile/*.json | wc -l)
[ "$n" -ge 14 ] || fail "scenarios/hostile holds $n scenarios, expected at least 14"
# 25 and 26 spend most of their ~12 s each waiting for a killed prefill's aftermath: they run in
# a second pdkv run beside the others (its own work dir and --json; every run picks its ports
# at random among free ones, and neither of the two uses network namespaces)
slow=(scenarios/hostile/25-*.json scenarios/hostile/26-*.json)
[ -f "${slow[0]}" ] && [ -f "${slow[1]}" ] || fail "scenarios 25 and 26 not found: ${slow[*]}"
rest=()
for f in scenarios/hostile/*.json; do
	[ "$f" = "${slow[0]}" ] || [ "$f" = "${slow[1]}" ] || rest+=("$f")
done
start=$(date +%s.%N)
"$BIN/pdkv" run --workdir "$T/work-b" --json "$T/rb.json" "${slow[@]}" >"$T/out-b" 2>&1 &
bpid=$!
"$BIN/pdkv" run --workdir "$T/work" --json "$T/r.json" "${rest[@]}" >"$T/out" 2>&1
rc=$?
wait $bpid
rcb=$?
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
cat "$T/out-b" "$T/out"
[ $rcb -eq 0 ] || fail "pdkv run ${slow[*]} exited $rcb, want 0"
[ $rc -eq 0 ] || fail "pdkv run (the other scenarios of scenarios/hostile) exited $rc, want 0"
for o in "$T/out-b" "$T/out"; do
	last=$(tail -n 1 "$o")
	[[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed(,\ [0-9]+\ skipped)?$ ]] || fail "last line \"$last\""
done
if command -v python3 >/dev/null; then
	python3 - "$n" "$T/rb.json" "$T/r.json" <<'PY' || fail "--json content"
import json, sys
total = 0
for f in sys.argv[2:]:
    d = json.load(open(f))
    total += d["summary"]["scenarios"]
    assert d["summary"]["failed"] == 0, d["summary"]
    for sc in d["scenarios"]:
        assert sc["status"] in ("PASS", "NOTRUN"), sc["name"]
assert total == int(sys.argv[1]), (total, sys.argv[1])
PY
fi
left=$(pgrep -f "$T/work" || true)
[ -z "$left" ] || fail "processes left behind: $left"
echo "ok: hostile suite ($n scenarios) in ${wall}s"
