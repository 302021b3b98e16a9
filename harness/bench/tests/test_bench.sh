#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench: pdkv-bench end to end — usage errors, loopback over P2PHANDSHAKE with --check and
# the socket baseline, --gap-ms, --min-bw failing, loopback over real etcd / redis / pdkv-metaserver, and
# a separate target + initiator over etcd whose keys etcdctl sees while up and not after SIGINT.
set -u
BIN=${PDKV_BIN:-build/bin}
B="$BIN/pdkv-bench"
export MC_TCP_BIND_ADDRESS=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && tail -20 "$T/out"; exit 1; }
USED=" "
free_port() { # distinct from every port handed out before; nothing listening on it now
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % (EPH_LO - 20000)))   # below the ephemeral range: no connect() takes it
    case "$USED" in *" $p "*) continue ;; esac
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && continue
    USED="$USED$p "
    PORT=$p
    return
  done
  PORT=0
}
EPH_LO=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$EPH_LO" -gt 21000 ] 2>/dev/null || EPH_LO=32768
wait_port() { for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
[ -x "$B" ] || { echo "SKIP: $B not built"; exit 77; }
SHORT="-b 4K -e 64K -f 16 --batch_size=16 --duration=0.3 --check"

# usage errors name the flag, exit 2
"$B" --block_size=abc >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --block_size: want exit 2"
grep -q -- "--block_size" "$T/out" || fail "bad --block_size: message does not name the flag"
"$B" --mode=initiator >"$T/out" 2>&1; [ $? -eq 2 ] || fail "initiator without --segment_id: want exit 2"
"$B" --operation=copy >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --operation: want exit 2"

# --compare-perftest is RDMA only (ib_write_bw): with tcp -> exit 2 naming the fix
"$B" --protocol=tcp --compare-perftest >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--compare-perftest with tcp: want exit 2"
grep -q -- "--compare-perftest .*needs --protocol=rdma" "$T/out" || fail "--compare-perftest with tcp: no clear message"
"$B" --protocol=rdma --compare-perftest --perftest_duration=0 >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --perftest_duration: want exit 2"
# --protocol=rdma on a host without an RDMA device (this one; skipped where one exists): a clear
# error, non-zero, no crash (both loopback and initiator)
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
  for mode in "--mode=loopback" "--mode=initiator --segment_id=127.0.0.1:9"; do
    # shellcheck disable=SC2086
    timeout 30 "$B" $mode --protocol=rdma --block_size=4K --batch_size=4 --duration=0.2 >"$T/out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "rdma without a device ($mode): want exit 1, got $rc"
    grep -q "no RDMA device" "$T/out" || fail "rdma without a device ($mode): no clear message"
  done
  # the target side with --compare-perftest: ib_write_bw servers stopped, nothing left behind
  # (a small buffer: filling the default 1 GiB alone takes over 30 s under make tsan)
  TMPDIR=$T timeout 30 "$B" --mode=target --protocol=rdma --device_name=none0 --compare-perftest \
    --buffer_size=8M >"$T/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "rdma target without a device: want exit 1, got $rc"
  pgrep -f "ib_write_bw -d none0" >/dev/null && fail "an ib_write_bw server outlived the target"
fi

# loopback, P2PHANDSHAKE, both operations, every byte checked, JSON + CSV
"$B" --operation=write,read $SHORT --baseline=socket --json "$T/b.json" --csv "$T/b.csv" >"$T/out" 2>&1 ||
  fail "loopback P2P run failed"
[ "$(grep -c '^Test completed: duration' "$T/out")" -eq 8 ] || fail "expected 8 'Test completed' lines"
grep -q '# ratio pdkv/socket write 65536' "$T/out" || fail "no socket ratio line"
grep -q '"ratios_vs_socket"' "$T/b.json" || fail "json lacks ratios"
[ "$(grep -c '"wrong":[[:space:]]*0' "$T/b.json")" -eq 8 ] || fail "json: wrong bytes reported"
[ "$(wc -l <"$T/b.csv")" -eq 9 ] || fail "csv: expected header + 8 rows"

# --gap-ms: idle between timed batches (a one-shot transfer each), not counted in the time:
# 0.5 s with 100 ms gaps holds at most 5 batches where it would hold hundreds, all checked
"$B" --operation=write --block_size=4K --batch_size=8 --duration=0.5 --gap-ms=100 --check \
  --json "$T/g.json" >"$T/out" 2>&1 || fail "--gap-ms run failed"
grep -q "gap            : 100 ms" "$T/out" || fail "--gap-ms: not in the header"
python3 - "$T/g.json" <<'PY' || fail "--gap-ms: json"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rows"][0]
assert d["meta"]["gap_ms"] == 100, d["meta"]
assert 1 <= r["batches"] <= 5, r["batches"]
assert r["wrong"] == 0 and r["duration_s"] < 0.25, r
PY
"$B" --gap-ms=-1 >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --gap-ms: want exit 2"
grep -q -- "--gap-ms" "$T/out" || fail "bad --gap-ms: message does not name the flag"
"$B" --gap-ms=20 --compare-mooncake=/bin/true >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--gap-ms with --compare-mooncake: want exit 2"
grep -q -- "--gap-ms cannot go with --compare-mooncake" "$T/out" || fail "--gap-ms with --compare-mooncake: no clear message"

# --affinity: the initiator's threads on one half of the CPUs, the spawned target's on the other
# (every row alike), said in the banner and the JSON meta; a bad spec names the flag, exit 2
"$B" --affinity=0/x >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --affinity: want exit 2"
grep -q -- "--affinity=0/x: .*CPU list" "$T/out" || fail "bad --affinity: no clear message"
"$B" --mode=target --affinity=split >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--affinity as target: want exit 2"
grep -q -- "--affinity splits a --mode=loopback" "$T/out" || fail "--affinity as target: no clear message"
read -r NCPU CPUA CPUB < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(len(c), c[0], c[-1])')
if [ "$NCPU" -ge 2 ]; then
  "$B" --operation=write --block_size=64K --batch_size=16 --duration=3 --baseline=socket \
    --affinity="$CPUA/$CPUB" --json "$T/a.json" >"$T/out" 2>&1 &
  BP=$!
  PIDS+=("$BP")
  seen=
  for _ in $(seq 100); do
    tp=$(pgrep -P "$BP" pdkv-bench | head -1)
    if [ -n "$tp" ] && grep -q "socket" "$T/out"; then
      ti=$(grep -h Cpus_allowed_list /proc/"$BP"/task/*/status 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
      tt=$(grep -h Cpus_allowed_list /proc/"$tp"/task/*/status 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
      [ "$ti" = "$CPUA " ] || fail "--affinity=$CPUA/$CPUB: initiator threads on CPUs '$ti'"
      [ "$tt" = "$CPUB " ] || fail "--affinity=$CPUA/$CPUB: target threads on CPUs '$tt'"
      seen=1
      break
    fi
    sleep 0.1
  done
  wait "$BP" || fail "--affinity run failed"
  PIDS=() # it was the only one so far (the services below check theirs are alive)
  [ -n "$seen" ] || fail "--affinity: never saw the spawned target running"
  grep -q "affinity       : initiator on CPU $CPUA, target on CPU $CPUB" "$T/out" ||
    fail "--affinity: not in the header"
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["meta"]; assert m["affinity"].startswith("initiator on CPU"), m["affinity"]' \
    "$T/a.json" || fail "--affinity: not in the JSON meta"
else
  echo "NOTE: one CPU here: --affinity placement not checked"
fi

# --congestion=NAME: every data socket of the run, pdkv's (lane and target) and the socket
# baseline's (both ends), uses that congestion control (seen with ss on the target's two ports
# while the run goes); said in the banner and the JSON meta; a bad or missing name: exit 2
"$B" --congestion='x;y' >"$T/out" 2>&1; [ $? -eq 2 ] || fail "bad --congestion: want exit 2"
grep -q -- "--congestion=x;y: expected the name of a TCP congestion control" "$T/out" ||
  fail "bad --congestion: no clear message"
"$B" --congestion=nosuchcc >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--congestion=nosuchcc: want exit 2"
grep -q -- "--congestion=nosuchcc: not available on this host (it offers: " "$T/out" ||
  fail "--congestion=nosuchcc: no clear message"
HOSTCC=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)
CC=reno
[ "$HOSTCC" = reno ] && CC=cubic
if command -v ss >/dev/null && [ -n "$HOSTCC" ]; then
  "$B" --operation=write --block_size=64K --batch_size=16 --duration=1.5 --repeat=2 \
    --baseline=socket --congestion=$CC --json "$T/cc.json" >"$T/out" 2>&1 &
  BP=$!
  PIDS+=("$BP")
  : >"$T/ss"
  while kill -0 "$BP" 2>/dev/null; do
    tp=$(pgrep -P "$BP" pdkv-bench | head -1)
    # the target's established sockets: "<local port> <congestion control>"
    [ -n "$tp" ] && ss -tinpH state established 2>/dev/null |
      awk -v t="pid=$tp," 'index($0, t) { n = split($3, l, ":"); port = l[n]; p = 1; next }
        p { p = 0; n = split($0, w, /[ \t]+/)   # the first word after ts, sack, ecn...
            for (i = 1; i <= n; i++) if (w[i] !~ /^(|ts|sack|ecn|ecnseen|fastopen)$/) break
            print port, w[i] }' >>"$T/ss"
    sleep 0.2
  done
  wait "$BP" || fail "--congestion=$CC run failed"
  PIDS=()
  ports=$(awk -v c="$CC" '$2 == c { print $1 }' "$T/ss" | sort -u | wc -l)
  # a data port (the listener's, shared by every socket it accepted) seen on another control;
  # the short-lived handshake connection on its own port keeps the host's default
  other=$(awk -v c="$CC" '$2 == c { on[$1] = 1 } $2 != c { off[$1 " " $2] = 1 }
    END { for (k in off) { split(k, w, " "); if (w[1] in on) print k } }' "$T/ss" | sort | head -3)
  [ "$ports" -ge 2 ] ||
    fail "--congestion=$CC: want the target's pdkv and socket-baseline ports on $CC, saw: $(sort -u "$T/ss" | tr '\n' ' ')"
  [ -z "$other" ] || fail "--congestion=$CC: target sockets on another congestion control: $other"
  grep -q "congestion     : $CC (--congestion; host default $HOSTCC)" "$T/out" ||
    fail "--congestion: not in the header"
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["meta"]; assert m["congestion_control"] == sys.argv[2] and m["congestion_control_host"] == sys.argv[3], m' \
    "$T/cc.json" "$CC" "$HOSTCC" || fail "--congestion: not in the JSON meta"
  # --repeat: each interleaved pair's pdkv/socket and their median, from the rows themselves
  python3 - "$T/cc.json" "$T/out" <<'PY' || fail "--repeat: the per-pair ratio line is wrong"
import json, re, statistics, sys
rows = json.load(open(sys.argv[1]))["rows"]
s = [r["GBps"] for r in rows if r["kind"] == "socket"]
p = [r["GBps"] for r in rows if r["kind"] == "pdkv"]
want = [round(a / b, 2) for a, b in zip(p, s)]
m = re.search(r"^# ratio pdkv/socket write 65536 B per interleaved pair: (.*), median (\S+)$",
              open(sys.argv[2]).read(), re.M)
got = [float(x) for x in m.group(1).split()]
assert len(got) == 2 and all(abs(a - b) < 0.011 for a, b in zip(got, want)), (got, want)
assert abs(float(m.group(2)) - statistics.median(a / b for a, b in zip(p, s))) < 0.006, m.group(2)
PY
else
  echo "NOTE: no ss or no /proc/sys/net/ipv4/tcp_congestion_control: --congestion not checked"
fi

# --buffers=N: each side's memory as N allocations (a per-layer KV cache), every byte checked
# both ways at sizes whose blocks do not divide evenly over the allocations; in the banner and
# the JSON meta; refused beside the rows it does not apply to
for op in write read; do
  "$B" --operation=$op -b 4K -e 256K -f 64 --batch_size=13 --threads=2 --duration=0.2 --check \
    --buffers=7 --json "$T/nb.json" >"$T/out" 2>&1 || fail "--buffers=7 $op: exit $? ($(tail -2 "$T/out" | tr '\n' ' '))"
  [ "$(grep -c '^  pdkv ' "$T/out")" = 2 ] || fail "--buffers=7 $op: want 2 rows"
  grep '^  pdkv ' "$T/out" | awk '$(NF-1) != 0 || $NF != 0 {exit 1}' || fail "--buffers=7 $op: wrong or failed bytes"
done
grep -q "buffers        : 7 separate allocations per side" "$T/out" || fail "--buffers: not in the header"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["meta"]["buffers"] == 7' "$T/nb.json" ||
  fail "--buffers: not in the JSON meta"
"$B" --buffers=2 --baseline=socket >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--buffers with --baseline: want exit 2"
grep -q -- "--buffers=2 is for pdkv's engine rows alone" "$T/out" || fail "--buffers with --baseline: no clear message"
"$B" --buffers=0 >"$T/out" 2>&1; [ $? -eq 2 ] || fail "--buffers=0: want exit 2"

# --min-bw that cannot be met -> exit 1 with perftest's wording
"$B" --operation=write --block_size=4K --batch_size=8 --duration=0.2 --min-bw=100000 >"$T/out" 2>&1
[ $? -eq 1 ] || fail "--min-bw: want exit 1"
grep -q "is below --min-bw" "$T/out" || fail "--min-bw: no message"

# real metadata stores
free_port; EP=$PORT; free_port; PP=$PORT
etcd --name default --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
  --advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
  --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "default=http://127.0.0.1:$PP" \
  --log-level warn --logger zap >"$T/etcd.log" 2>&1 &
PIDS+=($!)
free_port; RP=$PORT
redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" >"$T/redis.log" 2>&1 &
PIDS+=($!)
free_port; HP=$PORT
"$BIN/pdkv-metaserver" --port "$HP" --host 127.0.0.1 >"$T/http.log" 2>&1 &
PIDS+=($!)
for svc in "etcd $EP etcd.log" "redis $RP redis.log" "metaserver $HP http.log"; do
  set -- $svc
  wait_port "$2" || fail "metadata service $1 did not start on port $2 in 30 s: $(tail -n 3 "$T/$3" | tr '\n' ' ')"
done
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a metadata service exited (port taken?)"; done
for conn in "etcd://127.0.0.1:$EP" "127.0.0.1:$EP" "redis://127.0.0.1:$RP" "http://127.0.0.1:$HP/metadata"; do
  "$B" --metadata_server="$conn" --operation=write,read $SHORT >"$T/out" 2>&1 ||
    fail "loopback over $conn failed"
done

# separate target and initiator over etcd; keys visible, then removed on SIGINT
export ETCDCTL_API=3
ETC="etcdctl --endpoints=http://127.0.0.1:$EP"
"$B" --mode=target --metadata_server="etcd://127.0.0.1:$EP" --local_server_name=bench-tgt:1 \
  --buffer_size=8M >"$T/target.log" 2>&1 &
TPID=$!
PIDS+=($TPID)
for _ in $(seq 100); do grep -q "segment bench-tgt:1" "$T/target.log" && break; sleep 0.1; done
grep -q "Transfer engine target started: segment bench-tgt:1" "$T/target.log" || fail "target did not start"
$ETC get --prefix mooncake/ --keys-only >"$T/keys" 2>&1 || fail "etcdctl failed"
grep -qx "mooncake/ram/bench-tgt:1" "$T/keys" || fail "segment key missing: $(cat "$T/keys")"
grep -qx "mooncake/rpc_meta/bench-tgt:1" "$T/keys" || fail "rpc_meta key missing"
$ETC get mooncake/ram/bench-tgt:1 --print-value-only | grep -q '"protocol":"tcp"' || fail "descriptor lacks protocol tcp"
"$B" --mode=initiator --metadata_server="etcd://127.0.0.1:$EP" --local_server_name=bench-init:1 \
  --segment_id=bench-tgt:1 --operation=write --block_size=64K --batch_size=16 --duration=0.3 --check \
  >"$T/out" 2>&1 || fail "initiator over etcd failed"
grep -q "^Test completed: duration" "$T/out" || fail "initiator printed no completion line"
kill -INT "$TPID"
wait "$TPID"; rc=$?
[ $rc -eq 0 ] || fail "target exit $rc after SIGINT"
# a target with --buffers=4 publishes four buffers; an initiator that wants five is told why
"$B" --mode=target --metadata_server="etcd://127.0.0.1:$EP" --local_server_name=bench-tgt:2 \
  --buffer_size=8M --buffers=4 >"$T/target2.log" 2>&1 &
TPID=$!
PIDS+=($TPID)
for _ in $(seq 100); do grep -q "segment bench-tgt:2" "$T/target2.log" && break; sleep 0.1; done
grep -q "4 buffers of 2097152 bytes" "$T/target2.log" || fail "--buffers=4 target: $(cat "$T/target2.log")"
$ETC get mooncake/ram/bench-tgt:2 --print-value-only |
  python3 -c 'import json, sys; d = json.load(sys.stdin); assert len(d["buffers"]) == 4, d["buffers"]' ||
  fail "--buffers=4 target: the descriptor does not list 4 buffers"
"$B" --mode=initiator --metadata_server="etcd://127.0.0.1:$EP" --local_server_name=bench-init:2 \
  --segment_id=bench-tgt:2 --operation=write --block_size=64K --batch_size=16 --duration=0.3 --check \
  --buffers=4 >"$T/out" 2>&1 || fail "--buffers=4 initiator failed: $(tail -3 "$T/out")"
"$B" --mode=initiator --metadata_server="etcd://127.0.0.1:$EP" --local_server_name=bench-init:3 \
  --segment_id=bench-tgt:2 --operation=write --block_size=64K --batch_size=16 --duration=0.3 \
  --buffers=5 >"$T/out" 2>&1 && fail "--buffers=5 against 4 buffers: want a failure"
grep -q "segment bench-tgt:2 has 4 registered buffers; start its target with --buffers=5" "$T/out" ||
  fail "--buffers=5 against 4 buffers: no clear message: $(tail -2 "$T/out")"
kill -INT "$TPID"
wait "$TPID" || fail "--buffers=4 target: exit $? after SIGINT"
$ETC get --prefix mooncake/ --keys-only >"$T/keys" 2>&1
[ ! -s "$T/keys" ] || fail "keys left after shutdown: $(cat "$T/keys")"
echo "bench: all checks passed"
