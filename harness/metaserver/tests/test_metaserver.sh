#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_metaserver: pdkv-metaserver's HTTP contract (Mooncake's metadata API) and its flags,
# driven with curl against a real instance on a free loopback port.
set -u
BIN=${PDKV_BIN:-build/bin}/pdkv-metaserver
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
[ -x "$BIN" ] || { echo "FAIL: $BIN not built"; exit 1; }
TMP=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
fails=0
check() { # name expected actual
  if [ "$2" == "$3" ]; then echo "ok   $1"; return; fi
  echo "FAIL $1: expected [$2] got [$3]"; fails=$((fails+1))
  # no HTTP answer: was the server still there, and what did it say?
  [ "$3" != 000 ] || echo "  (server pid ${PID:-?} $(kill -0 "${PID:-none}" 2>/dev/null && echo alive || echo gone); stdout: $(tail -2 "$TMP/out" | tr '\n' ' ') stderr: $(tail -3 "$TMP/err" | tr '\n' ' '))"
}
start() { # extra args...
  "$BIN" --host 127.0.0.1 --port 0 "$@" >"$TMP/out" 2>"$TMP/err" &
  PID=$!
  for _ in $(seq 1 100); do grep -q listening "$TMP/out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(sed -n 's#.*127\.0\.0\.1:\([0-9][0-9]*\)/.*#\1#p' "$TMP/out")
  U=http://127.0.0.1:$PORT
}
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 5 "$@"; }

start --max-body 1KiB
[ -n "$PORT" ] || { echo "FAIL: server did not start"; cat "$TMP/err"; exit 1; }
check "GET /health" 200 "$(code "$U/health")"
check "GET missing key" 404 "$(code "$U/metadata?key=mooncake%2Fram%2Fh%3A1")"
check "404 body" "metadata not found" "$(cat "$TMP/body")"
check "PUT" 200 "$(code -X PUT -H 'Content-Type: application/json' --data-binary '{"a":1}' "$U/metadata?key=mooncake%2Fram%2Fh%3A1")"
check "PUT body" "metadata updated" "$(cat "$TMP/body")"
check "GET" 200 "$(code "$U/metadata?key=mooncake%2Fram%2Fh%3A1")"
check "GET value" '{"a":1}' "$(cat "$TMP/body")"
check "any path with ?key=" 200 "$(code "$U/other/path?key=mooncake/ram/h:1")"
check "prefix listing" 200 "$(code "$U/?prefix=mooncake/ram/")"
grep -q '"mooncake/ram/h:1"' "$TMP/body"; check "listing has key" 0 $?
check "DELETE" 200 "$(code -X DELETE "$U/metadata?key=mooncake%2Fram%2Fh%3A1")"
check "DELETE missing (Python server: 404)" 404 "$(code -X DELETE "$U/metadata?key=mooncake%2Fram%2Fh%3A1")"
check "empty key" 400 "$(code "$U/metadata?key=")"
check "no key" 400 "$(code "$U/metadata")"
check "method" 405 "$(code -X PATCH "$U/metadata?key=a")"
head -c 2048 /dev/zero | tr '\0' x >"$TMP/big"
check "body over --max-body" 413 "$(code -X PUT --data-binary @"$TMP/big" "$U/metadata?key=big")"
check "chunked body over --max-body" 413 "$(code -X PUT -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/big" "$U/metadata?key=big")"
check "too-big value not stored" 404 "$(code "$U/metadata?key=big")"
# a second server on the same port fails with a message, exit 1
"$BIN" --host 127.0.0.1 --port "$PORT" >/dev/null 2>"$TMP/err2"; rc=$?
check "port in use exits 1" 1 $rc
grep -q "cannot listen on 127.0.0.1:$PORT" "$TMP/err2"; check "port in use message" 0 $?
kill -TERM "$PID"; wait "$PID"; rc=$?; PID=
check "SIGTERM exits 0" 0 $rc

start --reject-duplicate-rpc-meta
check "rpc_meta first PUT" 200 "$(code -X PUT --data-binary '{}' "$U/metadata?key=mooncake/rpc_meta/n")"
check "rpc_meta duplicate PUT" 400 "$(code -X PUT --data-binary '{}' "$U/metadata?key=mooncake/rpc_meta/n")"
check "ram key overwrite still fine" 200 "$(code -X PUT --data-binary '{}' "$U/metadata?key=mooncake/ram/n")"
kill -INT "$PID"; wait "$PID"; rc=$?; PID=
check "SIGINT exits 0" 0 $rc

"$BIN" --port abc >/dev/null 2>&1; check "bad --port exits 2" 2 $?
"$BIN" --addr=8080 >/dev/null 2>&1; check "bad --addr exits 2" 2 $?
"$BIN" --bogus >/dev/null 2>&1; check "unknown flag exits 2" 2 $?
"$BIN" --help | grep -q -- '--addr'; check "--help" 0 $?
# Go spelling --addr=:PORT binds every interface
"$BIN" --addr=:0 >"$TMP/out3" 2>&1 & P3=$!
for _ in $(seq 1 100); do grep -q listening "$TMP/out3" && break; sleep 0.05; done
grep -q 'http://0.0.0.0:' "$TMP/out3"; check "--addr=:0 binds 0.0.0.0" 0 $?
kill "$P3"; wait "$P3" 2>/dev/null

# issue 11 D8: store limits, NUL in keys, /dump byte-exact and bounded
start --max-key 64 --max-total 3KiB --max-keys 3 --max-dump 1KiB --max-body 4KiB
check "D8 PUT a" 200 "$(code -X PUT --data-binary 'one' "$U/metadata?key=a")"
check "D8 key a%00b refused" 400 "$(code -X PUT --data-binary 'two' "$U/metadata?key=a%00b")"
check "D8 a%00b did not overwrite a" one "$(code "$U/metadata?key=a" >/dev/null; cat "$TMP/body")"
check "D8 GET a%00b" 400 "$(code "$U/metadata?key=a%00b")"
check "D8 key over --max-key" 414 "$(code -X PUT --data-binary x "$U/metadata?key=$(head -c 65 /dev/zero | tr '\0' k)")"
printf 'x\0y"\\' >"$TMP/nul"
check "D8 PUT value with NUL" 200 "$(code -X PUT --data-binary @"$TMP/nul" "$U/metadata?key=n")"
code "$U/metadata?key=n" >/dev/null; cmp -s "$TMP/nul" "$TMP/body"; check "D8 GET value byte-exact" 0 $?
check "D8 /dump" 200 "$(code "$U/dump")"
grep -qF '"n":	"x\u0000y\"\\"' "$TMP/body"; check "D8 /dump keeps bytes after NUL" 0 $?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["n"]=="x\x00y\"\\" and d["a"]=="one"' "$TMP/body" 2>/dev/null
check "D8 /dump is JSON with the exact values" 0 $?
# issue 34 N8: binary bytes (not UTF-8) in a value: /dump stays valid UTF-8 JSON, each such
# byte as \u00XX; well-formed UTF-8 (here U+00E9 and U+1F600) goes through as is
printf 'b\xff\xfe\xc3\xa9\xc3\xed\xa0\x80\xf0\x9f\x98\x80z' >"$TMP/bin"
check "N8 PUT binary value" 200 "$(code -X PUT --data-binary @"$TMP/bin" "$U/metadata?key=u")"
check "N8 /dump with a binary value" 200 "$(code "$U/dump")"
python3 -c 'import json,sys; t=open(sys.argv[1],"rb").read().decode("utf-8"); d=json.loads(t); assert d["u"]=="b\xff\xfe\xe9\xc3\xed\xa0\x80\U0001F600z", ascii(d["u"])' "$TMP/body"
check "N8 /dump is valid UTF-8 JSON, non-UTF-8 bytes escaped" 0 $?
code "$U/metadata?key=u" >/dev/null; cmp -s "$TMP/bin" "$TMP/body"; check "N8 GET binary value byte-exact" 0 $?
check "N8 DELETE binary value" 200 "$(code -X DELETE "$U/metadata?key=u")"
head -c 1500 /dev/zero | tr '\0' v >"$TMP/v1500"
check "D8 PUT 1500 B" 200 "$(code -X PUT --data-binary @"$TMP/v1500" "$U/metadata?key=b")"
check "D8 4th key over --max-keys" 507 "$(code -X PUT --data-binary x "$U/metadata?key=c4")"
check "D8 /dump over --max-dump" 507 "$(code "$U/dump")"
grep -q "max-dump" "$TMP/body"; check "D8 /dump refusal names --max-dump" 0 $?
check "D8 ?prefix= still answers" 200 "$(code "$U/?prefix=a")"
cat "$TMP/big" "$TMP/big" >"$TMP/big4k"
check "D8 overwrite over --max-total" 507 "$(code -X PUT --data-binary @"$TMP/big4k" "$U/metadata?key=b")"
check "D8 overwrite within --max-total" 200 "$(code -X PUT --data-binary x "$U/metadata?key=b")"
check "D8 room again after shrinking" 200 "$(code -X PUT --data-binary @"$TMP/big" "$U/metadata?key=b")"
grep -q "store full" "$TMP/err"; check "D8 refusal logged" 0 $?
kill -TERM "$PID"; wait "$PID"; PID=
"$BIN" --max-total 0 >/dev/null 2>&1; check "bad --max-total exits 2" 2 $?
"$BIN" --max-connections-per-client x >/dev/null 2>&1; check "bad --max-connections-per-client exits 2" 2 $?

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
