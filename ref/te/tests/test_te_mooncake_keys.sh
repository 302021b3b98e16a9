#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_te_mooncake_keys: key order and start-up as Mooncake, seen by real stores — rpc_meta is
# written before the segment key and deleted first (redis MONITOR); the initiator's buffers
# are published before it reads the target's segment (bench registers first); a stale
# rpc_meta refused by pdkv-metaserver --reject-duplicate-rpc-meta fails the start, is removed
# with a message, and the next start succeeds.
set -u
BIN=${PDKV_BIN:-build/bin}
B="$BIN/pdkv-bench"
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-keys.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && tail -20 "$T/out"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
[ -x "$B" ] || { echo "SKIP: $B not built"; exit 77; }
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "SKIP: redis not installed"; exit 77; }

# --- redis MONITOR: the order of SET/DEL for a target, and of an initiator's SET vs its GET
RP=$(free_port)
redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no >"$T/redis.log" 2>&1 &
PIDS+=($!)
wait_port "$RP" || fail "redis did not start"
redis-cli -p "$RP" monitor >"$T/mon" 2>&1 &
PIDS+=($!)
sleep 0.3
"$B" --mode=target --metadata_server=redis://127.0.0.1:$RP --protocol=tcp \
  --local_server_name=127.0.0.1:kt1 --buffer_size=4MiB --ready_file="$T/ready" >"$T/out" 2>&1 &
TP=$!
PIDS+=($TP)
wait_file "$T/ready" || fail "target did not come up"
"$B" --mode=initiator --metadata_server=redis://127.0.0.1:$RP --protocol=tcp \
  --local_server_name=127.0.0.1:ki1 --segment_id=127.0.0.1:kt1 --block_size=4K \
  --batch_size=4 --threads=1 --duration=0.1 >"$T/out" 2>&1 || fail "initiator failed"
kill -INT $TP
wait $TP || fail "target did not exit cleanly"
sleep 0.3
line() { grep -n -- "$1" "$T/mon" | head -1 | cut -d: -f1; }
r_set=$(line '"SET" "mooncake/rpc_meta/127.0.0.1:kt1"')
s_set=$(line '"SET" "mooncake/ram/127.0.0.1:kt1"')
r_del=$(line '"DEL" "mooncake/rpc_meta/127.0.0.1:kt1"')
s_del=$(line '"DEL" "mooncake/ram/127.0.0.1:kt1"')
[ -n "$r_set" ] && [ -n "$s_set" ] && [ -n "$r_del" ] && [ -n "$s_del" ] || fail "MONITOR missed a command: $(cat "$T/mon")"
[ "$r_set" -lt "$s_set" ] || fail "segment key written before rpc_meta (Mooncake writes rpc_meta first)"
[ "$r_del" -lt "$s_del" ] || fail "segment key deleted before rpc_meta (Mooncake deletes rpc_meta first)"
# the initiator: its descriptor with buffers is in the store before it reads the target's
i_buf=$(grep -n '"SET" "mooncake/ram/127.0.0.1:ki1" .*addr' "$T/mon" | head -1 | cut -d: -f1)
i_get=$(line '"GET" "mooncake/ram/127.0.0.1:kt1"')
[ -n "$i_buf" ] && [ -n "$i_get" ] || fail "MONITOR missed the initiator's SET/GET"
[ "$i_buf" -lt "$i_get" ] || fail "the initiator opened the target before registering its buffers"
echo "ok: rpc_meta first on SET and on DEL; initiator registers before opening"

# --- a stale rpc_meta the store refuses: the start fails, the key goes, the next start works
MP=$(free_port)
"$BIN/pdkv-metaserver" --addr 127.0.0.1:"$MP" --reject-duplicate-rpc-meta >"$T/ms.log" 2>&1 &
PIDS+=($!)
wait_port "$MP" || fail "pdkv-metaserver did not start"
URL="http://127.0.0.1:$MP/metadata?key=mooncake%2Frpc_meta%2F127.0.0.1%3Akt2"
curl -s -o /dev/null -X PUT --data '{"ip_or_host_name":"127.0.0.1","rpc_port":9}' "$URL" || fail "cannot seed the stale key"
timeout 30 "$B" --mode=target --metadata_server=http://127.0.0.1:$MP/metadata --protocol=tcp \
  --local_server_name=127.0.0.1:kt2 --buffer_size=1MiB >"$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "start over a stale rpc_meta: want exit 1, got $rc"
grep -q "already exists.*Removing the stale key" "$T/out" || fail "no clear message about the stale key"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL")
[ "$code" = 404 ] || fail "the stale rpc_meta is still there (HTTP $code)"
rm -f "$T/ready"
"$B" --mode=target --metadata_server=http://127.0.0.1:$MP/metadata --protocol=tcp \
  --local_server_name=127.0.0.1:kt2 --buffer_size=1MiB --ready_file="$T/ready" >"$T/out" 2>&1 &
TP=$!
PIDS+=($TP)
wait_file "$T/ready" || fail "the second start did not come up"
kill -INT $TP
wait $TP || fail "second target did not exit cleanly"
echo "ok: stale rpc_meta removed with a message, the next start succeeds"
