#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run's own behaviour: exit codes 0 / 1 / 77 / 2, a broken scenario names file and field,
# a real failure prints the numbers that broke it (and lands in --junit as <failure>), --strict,
# --timeout, and Ctrl-C: the run stops, says so, and leaves no process behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${PDKV_BIN:-build/bin}
[ -x "$BIN/pdkv-run" ] && [ -x "$BIN/pdkv-standin" ] || { echo "SKIP: binaries not built"; exit 77; }
T=$(mktemp -d /tmp/pdkv-cli.XXXXXX)
RPID=
cleanup() { [ -n "$RPID" ] && kill -KILL "$RPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && { echo "--- output:"; cat "$T/out"; }; exit 1; }
run() { "$BIN/pdkv-run" "$@" >"$T/out" 2>&1; echo $?; }
GEOM='"--kv-layers","2","--kv-heads","1","--head-dim","32","--hidden-size","64","--ns-per-token","1000"'

# usage
[ "$(run --help)" = 0 ] || fail "--help"
[ "$(run --bogus)" = 2 ] || fail "unknown option should exit 2"
grep -q 'unknown option --bogus' "$T/out" || fail "unknown option message"
[ "$(run --timeout abc)" = 2 ] || fail "--timeout abc should exit 2"

# --list through the dispatcher finds the default suite next to the build
[ "$("$BIN/pdkv" run --list >"$T/out" 2>&1; echo $?)" = 0 ] || fail "pdkv run --list"
grep -q '^1p1d-tcp-etcd ' "$T/out" || fail "--list misses the default suite"
grep -q 'kv_reused(must fail)' "$T/out" || fail "--list does not mark self-tests"

# a broken scenario file: FAIL naming the file and the field, exit 1
cat >"$T/bad.json" <<J
{ "name": "bad", "metadata": "etcd", "workload": { "requests": 4, "stream": "yes" } }
J
[ "$(run "$T/bad.json")" = 1 ] || fail "broken scenario should exit 1"
grep -q "$T/bad.json: workload.stream: expected true or false" "$T/out" || fail "parse error text"
tail -n 1 "$T/out" | grep -qx '0 passed, 1 failed, 0 skipped' || fail "summary for a broken file"
run --junit "$T/bad.xml" "$T/bad.json" >/dev/null
grep -q '<error type="load" message="[^"]*workload.stream: expected true or false' "$T/bad.xml" ||
	fail "a scenario that cannot be loaded is a JUnit <error>"

# nothing runnable: 77; under --strict: 1
cat >"$T/rdma.json" <<J
{ "name": "rdma-only", "metadata": "http", "protocol": "rdma", "standin_args": [$GEOM] }
J
export PDKV_SYS_INFINIBAND="$T/no-ib"
mkdir -p "$PDKV_SYS_INFINIBAND"
[ "$(run "$T/rdma.json")" = 77 ] || fail "all-NOTRUN should exit 77"
grep -q 'NOTRUN' "$T/out" || fail "NOTRUN line"
[ "$(run --strict "$T/rdma.json")" = 1 ] || fail "--strict NOTRUN should exit 1"
[ "$(run --filter no-such-name "$T/rdma.json")" = 77 ] || fail "--filter matching nothing: 77"

# a real failure: the dropped-KV fault without expect_fail -> FAIL with kv_reused's numbers
cat >"$T/drop.json" <<J
{ "name": "drop-unexpected", "metadata": "http",
  "standin_args": [$GEOM], "prefill_args": ["--fault", "drop"],
  "decode_args": ["--kv-select-timeout", "300"],
  "workload": { "requests": 2, "prompt_tokens": [50, 70] },
  "checks": ["http_ok", "kv_reused"] }
J
cat >"$T/ok.json" <<J
{ "name": "ok", "metadata": "http", "standin_args": [$GEOM],
  "workload": { "requests": 2, "prompt_tokens": [40, 90], "stream": true } }
J
[ "$(run --junit "$T/j.xml" --workdir "$T/w1" "$T/ok.json" "$T/drop.json")" = 1 ] ||
	fail "a failing scenario should exit 1"
grep -q '^ok  *PASS ' "$T/out" || fail "ok scenario should PASS"
grep -q '^drop-unexpected  *FAIL ' "$T/out" || fail "drop scenario should FAIL"
grep -q 'kv_reused: decode reused 0 of 120 prompt tokens, recomputed 120' "$T/out" ||
	fail "the failure does not show the numbers"
grep -q "# logs: $T/w1/drop-unexpected" "$T/out" || fail "failed work dir not kept/shown"
[ -s "$T/w1/drop-unexpected/decode.log" ] || fail "decode.log not kept"
[ -e "$T/w1/ok" ] && fail "passed work dir should be removed without --keep"
grep -q '<failure type="kv_reused"' "$T/j.xml" || fail "JUnit <failure>"
xmllint --noout --schema harness/tests/junit-jenkins.xsd "$T/j.xml" 2>/dev/null ||
	fail "--junit fails the Jenkins xUnit JUnit schema"
tail -n 1 "$T/out" | grep -qx '1 passed, 1 failed, 0 skipped' || fail "summary"

# only the good one: exit 0, and nothing of the run left in $TMPDIR after it
mkdir -p "$T/tmpd"
[ "$(TMPDIR=$T/tmpd run "$T/ok.json")" = 0 ] || fail "passing scenario should exit 0"
[ -z "$(ls -A "$T/tmpd")" ] || fail "a passing run left files in TMPDIR: $(ls -A "$T/tmpd")"

# --timeout: a slow deployment is stopped and reported
cat >"$T/slow.json" <<J
{ "name": "slow", "metadata": "http",
  "standin_args": ["--kv-layers","2","--kv-heads","1","--head-dim","32","--hidden-size","64",
                   "--ns-per-token","4000000"],
  "workload": { "requests": 4, "concurrency": 2, "prompt_tokens": [800], "max_tokens": 200 } }
J
t0=$(date +%s)
[ "$(run --timeout 4 --workdir "$T/w2" "$T/slow.json")" = 1 ] || fail "--timeout should FAIL"
# normally "while running the workload"; on a very loaded host startup may already be over it
grep -Eq 'timed out (after 4s while|waiting for /health)' "$T/out" || fail "timeout reason"
[ $(( $(date +%s) - t0 )) -le 20 ] || fail "--timeout 4 took too long"
[ -z "$(pgrep -f "$T/w2" || true)" ] || fail "processes left after a timeout"

# Ctrl-C in the middle of the workload: stop everything, report, exit 130, nothing left behind.
# The old output goes first: the background job truncates it only once it runs, and the wait
# loop below must not see the previous run's "requests through the proxy".
rm -f "$T/out"
"$BIN/pdkv-run" --workdir "$T/w3" "$T/slow.json" >"$T/out" 2>&1 &
RPID=$!
for _ in $(seq 400); do
	grep -q 'requests through the proxy' "$T/out" 2>/dev/null && break
	sleep 0.1
done
grep -q 'requests through the proxy' "$T/out" || fail "workload never started"
kids=$(pgrep -P "$RPID" | tr '\n' ' ')
[ "$(echo $kids | wc -w)" -ge 4 ] || fail "expected metadata, prefill, decode, plain, proxy; got: $kids"
kill -INT "$RPID"
for _ in $(seq 150); do kill -0 "$RPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$RPID" 2>/dev/null && fail "pdkv run still running 15s after SIGINT"
wait "$RPID"
rc=$?
RPID=
[ $rc = 130 ] || fail "SIGINT: exit $rc, want 130 (128 + SIGINT, as a shell reports it)"
grep -q 'interrupted while running the workload' "$T/out" || fail "SIGINT: reason"
grep -q '(interrupted)' "$T/out" || fail "SIGINT: summary"
for p in $kids; do
	kill -0 "$p" 2>/dev/null && fail "process $p ($(cat /proc/$p/comm 2>/dev/null)) left after SIGINT"
done
[ -z "$(pgrep -f "$T/w3" || true)" ] || fail "processes with the work dir left after SIGINT"
echo "ok: pdkv run CLI, exit codes, failure numbers, --timeout, SIGINT cleanup"
