#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run on a full disk (issue 34, N5): a --json/--junit report that cannot be written exits 2
# and leaves the previous file whole (no 0-byte report); a --workdir where logs cannot be written
# is a FAIL, not a PASS with empty logs. Needs root for a small tmpfs (SKIP otherwise).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-run" ] && [ -x "$BIN/pdkv-standin" ] || { echo "SKIP: binaries not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 77; }
T=$(mktemp -d /tmp/pdkv-full.XXXXXX)
FULL=$T/full
cleanup() { umount "$FULL" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$FULL"
mount -t tmpfs -o size=256k tmpfs "$FULL" 2>/dev/null || { echo "SKIP: cannot mount tmpfs"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && { echo "--- output:"; cat "$T/out"; }; exit 1; }
run() { "$BIN/pdkv-run" "$@" >"$T/out" 2>&1; echo $?; }
GEOM='"--kv-layers","2","--kv-heads","1","--head-dim","32","--hidden-size","64","--ns-per-token","1000"'
cat >"$T/ok.json" <<J
{ "name": "ok", "metadata": "http", "standin_args": [$GEOM],
  "workload": { "requests": 2, "prompt_tokens": [40, 90] } }
J

# a previous report, then the disk fills up
echo '{"previous": true}' >"$FULL/r.json"
dd if=/dev/zero of="$FULL/fill" bs=4k 2>/dev/null
[ "$(df --output=avail "$FULL" | tail -1 | tr -d ' ')" = 0 ] || fail "the tmpfs is not full"

rc=$(run --json "$FULL/r.json" --junit "$FULL/j.xml" --workdir "$T/w" "$T/ok.json")
[ "$rc" = 2 ] || fail "unwritable reports: exit $rc, expected 2"
grep -q "cannot write --json $FULL/r.json: No space left on device" "$T/out" || fail "--json message"
grep -q "cannot write --junit $FULL/j.xml: No space left on device" "$T/out" || fail "--junit message"
grep -q '1 passed' "$T/out" || fail "the scenario itself should still pass"
[ "$(cat "$FULL/r.json")" = '{"previous": true}' ] || fail "the previous --json report was not kept whole"
[ ! -e "$FULL/j.xml" ] || fail "a truncated --junit report was left ($(stat -c %s "$FULL/j.xml") bytes)"
[ -z "$(ls "$FULL" | grep tmp)" ] || fail "a temporary file was left: $(ls "$FULL")"
echo "ok   reports on a full disk: exit 2, previous report whole, none truncated"

rc=$(run --workdir "$FULL/w" "$T/ok.json")
[ "$rc" = 1 ] || fail "logs on a full disk: exit $rc, expected 1"
grep -q "FAIL" "$T/out" || fail "no FAIL line"
grep -q "cannot be written: No space left on device" "$T/out" || fail "the reason names the full disk"
echo "ok   --workdir on a full disk: FAIL with the reason"

# with room again, both work
rm -f "$FULL/fill"
rc=$(run --json "$FULL/r.json" --junit "$FULL/j.xml" --workdir "$T/w" "$T/ok.json")
[ "$rc" = 0 ] || fail "with room: exit $rc"
grep -q "\"tool\":[[:space:]]*\"pdkv run\"" "$FULL/r.json" || fail "--json not written with room"
grep -q '<testsuites' "$FULL/j.xml" || fail "--junit not written with room"
echo "ok   with room again: reports written, exit 0"
