#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Router conformance (pdkv run --proxy-cmd / "proxy": {"cmd"}): pdkv-proxy in each contract
# passes its own contract's router_* checks and fails the others' where they differ; the Python
# test routers (scenarios/router/routers/byo_router.py) are caught by the check named for their
# fault. Each verdict is read from --json, check by check, with the evidence text.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-run" ] && [ -x "$BIN/pdkv-standin" ] && [ -x "$BIN/pdkv-proxy" ] ||
	{ echo "SKIP: binaries not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed (the test routers need it)"; exit 77; }
T=$(mktemp -d /tmp/pdkv-router.XXXXXX)
trap 'rm -rf "$T"' EXIT
S=scenarios/router
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && { echo "--- output:"; tail -n 40 "$T/out"; }; exit 1; }

# expect JSON ROW CHECK=RESULT[~TEXT]...: the ROW-th scenario of JSON has each CHECK with RESULT
# (and TEXT in its evidence)
expect() {
	python3 - "$@" <<'PY' || fail "verdicts of $1 row $2: see above"
import json, sys
doc = json.load(open(sys.argv[1]))
row = doc["scenarios"][int(sys.argv[2])]
got = {c["name"]: c for c in row["checks"]}
bad = 0
for want in sys.argv[3:]:
    name, rest = want.split("=", 1)
    res, _, text = rest.partition("~")
    c = got.get(name)
    if not c or c["result"] != res or (text and text not in c["detail"]):
        print("  %s: want %s%s, got %s" % (name, res, " ~ " + text if text else "",
              "%s: %s" % (c["result"], c["detail"]) if c else "no such check"))
        bad += 1
sys.exit(1 if bad else 0)
PY
}
run() { "$BIN/pdkv-run" --json "$T/r.json" "$@" >"$T/out" 2>&1; echo $?; }
ALL_PASS="http_ok=PASS kv_reused=PASS router_prefill_request=PASS router_decode_request=PASS
	router_ordering=PASS router_prefill_failure=PASS router_stream=PASS"

# 1. pdkv-proxy in each contract, as proxy.cmd, against its own generation: every check passes
for f in v0-pdkv-proxy-v0 gen-a-pdkv-proxy-toy gen-b-pdkv-proxy-mooncake; do
	[ "$(run "$S/$f.json")" = 0 ] || fail "$f should pass"
	# shellcheck disable=SC2086
	expect "$T/r.json" 0 $ALL_PASS
	grep -q "router_decode_request    PASS" "$T/out" || fail "$f: no per-router table"
done

# 2. the same binary in the other contracts, by --proxy-cmd (repeatable), graded as gen B
PX="$BIN/pdkv-proxy --host 127.0.0.1 --port {port} --prefill {prefill_url} {bootstrap_port} --decode {decode_url}"
[ "$(run --proxy-cmd "$PX --contract v0" --proxy-cmd "$PX --contract toy" \
	"$S/gen-b-pdkv-proxy-mooncake.json")" = 1 ] || fail "v0/toy graded as gen B should fail"
grep -q '^# router1: ' "$T/out" && grep -q 'router-gen-b-pdkv-proxy-mooncake \[router2\]' "$T/out" ||
	fail "--proxy-cmd rows are not labelled"
expect "$T/r.json" 0 router_decode_request=FAIL~transfer_id router_prefill_request=FAIL~transfer_id \
	kv_reused=FAIL router_stream=PASS router_prefill_failure=PASS
expect "$T/r.json" 1 router_decode_request=FAIL~transfer_id router_prefill_request=FAIL~transfer_id

# graded as gen A (toy): the v0 contract sends prefill no kv_transfer_params, so prefill answers
# none and decode recomputes (copying "none" is right: router_decode_request passes)
PXA="$BIN/pdkv-proxy --host 127.0.0.1 --port {port} --prefill {prefill_url} --decode {decode_url}"
[ "$(run --proxy-cmd "$PXA --contract v0" "$S/gen-a-pdkv-proxy-toy.json")" = 1 ] ||
	fail "v0 graded as gen A should fail"
expect "$T/r.json" 0 router_prefill_request=FAIL~"kv_transfer_params missing" \
	router_decode_request=PASS kv_reused=FAIL~"reused 0 of" router_ordering=PASS
# graded as V0: the toy contract only adds kv_transfer_params, which V0 asks nothing of, and a
# V0 prefill answers none to copy: it conforms (the contracts do not differ there)
[ "$(run --proxy-cmd "$PXA --contract toy" "$S/v0-pdkv-proxy-v0.json")" = 0 ] ||
	fail "toy graded as V0 should pass"
# shellcheck disable=SC2086
expect "$T/r.json" 0 $ALL_PASS

# 3. the non-conforming Python routers, each caught by the check named for its fault
[ "$(run "$S/gen-b-py-drop-transfer-id.json")" = 1 ] || fail "drop-transfer-id should fail"
expect "$T/r.json" 0 router_prefill_request=FAIL~"transfer_id missing" \
	router_decode_request=FAIL~"transfer_id missing" kv_reused=FAIL~"reused 0 of" \
	router_prefill_failure=FAIL~"falls through to decode" router_stream=PASS
[ "$(run "$S/gen-a-py-fall-through.json")" = 0 ] || fail "fall-through self-test should pass"
expect "$T/r.json" 0 router_prefill_failure=FAIL~"falls through to decode" \
	router_prefill_request=PASS router_decode_request=PASS router_ordering=PASS
[ "$(run "$S/v0-py-quart-guide.json")" = 1 ] || fail "the guide's proxy behaviour should fail"
expect "$T/r.json" 0 router_prefill_request=FAIL~"stream is not false" \
	router_prefill_failure=FAIL~"falls through to decode" router_decode_request=PASS

# 4. bad input: an unknown placeholder names itself; a router that never gets ready is bounded
[ "$(run --proxy-cmd "$PXA --contract v0 --bogus {prefil_url}" "$S/v0-pdkv-proxy-v0.json")" = 1 ] ||
	fail "unknown placeholder should fail"
grep -q 'unknown placeholder {prefil_url}' "$T/out" || fail "placeholder error text"
[ "$(run --proxy-cmd "python3 -c 'import time; time.sleep(60)'" --timeout 8 \
	"$S/v0-pdkv-proxy-v0.json")" = 1 ] || fail "a router that never listens should fail"
grep -q 'was not ready within' "$T/out" || fail "readiness timeout text"
[ "$(run --external prefill=http://x,decode=ftp://y,proxy=http://z)" = 2 ] || fail "bad --external"
grep -q 'decode=ftp://y' "$T/out" || fail "--external error names the field"
echo "PASS: router conformance"
