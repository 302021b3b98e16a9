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
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$T/out"; exit 1; }

n=$(ls scenarios/hostile/*.json | wc -l)
[ "$n" -ge 14 ] || fail "scenarios/hostile holds $n scenarios, expected at least 14"
start=$(date +%s.%N)
"$BIN/pdkv" run --workdir "$T/work" --json "$T/r.json" scenarios/hostile >"$T/out" 2>&1
rc=$?
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
cat "$T/out"
[ $rc -eq 0 ] || fail "pdkv run scenarios/hostile exited $rc, want 0"
last=$(tail -n 1 "$T/out")
[[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed(,\ [0-9]+\ skipped)?$ ]] || fail "last line \"$last\""
if command -v python3 >/dev/null; then
	python3 - "$T/r.json" "$n" <<'PY' || fail "--json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["summary"]["scenarios"] == int(sys.argv[2]), d["summary"]
assert d["summary"]["failed"] == 0, d["summary"]
for sc in d["scenarios"]:
    assert sc["status"] in ("PASS", "NOTRUN"), sc["name"]
PY
fi
left=$(pgrep -f "$T/work" || true)
[ -z "$left" ] || fail "processes left behind: $left"
echo "ok: hostile suite ($n scenarios) in ${wall}s"
