#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pdkv run --launcher slurm against a real Slurm (Debian's slurmctld, slurmd, munge): a cluster of
# three nodes on this machine, each slurmd in its own network namespace (198.18.0.0/15, a bridge
# to this host's stack) and its own UTS namespace (hostname = NodeName); slurmctld in a UTS
# namespace of its own on the bridge's address. Everything (slurm.conf, munge key and socket,
# spool, state, logs) lives in a temp dir removed on exit; the daemons are killed on exit.
# Checks: a 1P1D scenario and a TP=2 scenario PASS with every role an srun step on its node, and
# so do the reused-transfer_id router self-test (60) and a decode SIGKILLed mid-run (40) as
# they do locally; a flood fault is a NOTRUN (it reaches only processes on this host); a
# step killed mid-run fails the run cleanly, and so does a Ctrl-C (exit 130), each with no step
# left (squeue -s empty), no job and no process of the run left behind; a link-cut scenario
# PASSes with the cut made by a step on decode's node (a link down for good, or a node shared by
# hosts: NOTRUN); pdkv accept --slurm names n2, its link limited by tc tbf, and a clean run
# exits 0. NOTRUN (77) without root, namespaces or the Slurm packages.
set -u
cd "$(dirname "$0")/../.." || exit 1
. ci/testlib.sh
BIN=$(cd "${PDKV_BIN:-build/bin}" 2>/dev/null && pwd)
[ -x "$BIN/pdkv-run" ] || { echo "SKIP: pdkv-run not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network and UTS namespaces, slurmd as root)"; exit 77; }
for c in slurmctld slurmd munged srun salloc squeue scancel scontrol unshare nsenter ip etcd; do
	command -v "$c" >/dev/null || { echo "SKIP: $c not installed (bash ci/install-deps.sh)"; exit 77; }
done
T0=$(date +%s)
T=$(mktemp -d /tmp/pdkv-slurmci.XXXXXX)
chmod 755 "$T"
ID=$$
NS=pdkvsl$ID
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	[ -f "$T/munge/pid" ] && kill -9 "$(cat "$T/munge/pid")" 2>/dev/null
	for i in 1 2 3; do ip netns del "$NS-n$i" 2>/dev/null; done
	ip netns del "$NS-br" 2>/dev/null
	ip link del "sl${ID}r" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
notrun() { echo "SKIP: $*"; exit 77; }

# ---- the network: a bridge namespace, this host's end 198.18.X.1, nodes .11 .12 .13 ----
ip netns add "$NS-br" 2>/dev/null || notrun "cannot add a network namespace (no CAP_SYS_ADMIN?)"
X=
for k in $(seq 0 40); do # a /24 of 198.18.0.0/15 no interface here uses yet
	c=$(((ID + k * 7) % 250 + 1))
	ip -4 addr | grep -q " 198\.19\.$c\." || { X=$c; break; }
done
[ -n "$X" ] || notrun "no free /24 in 198.19.0.0/16"
NET=198.19.$X
ip -n "$NS-br" link set lo up &&
	ip -n "$NS-br" link add br0 type bridge && ip -n "$NS-br" link set br0 up &&
	ip link add "sl${ID}r" type veth peer name up0 netns "$NS-br" &&
	ip -n "$NS-br" link set up0 master br0 up &&
	ip addr add "$NET.1/24" dev "sl${ID}r" && ip link set "sl${ID}r" up ||
	notrun "cannot make the bridge (veth/bridge support missing?)"
for i in 1 2 3; do
	ip netns add "$NS-n$i" && ip -n "$NS-n$i" link set lo up &&
		ip -n "$NS-br" link add "p$i" type veth peer name eth0 netns "$NS-n$i" &&
		ip -n "$NS-br" link set "p$i" master br0 up &&
		ip -n "$NS-n$i" link set eth0 up && ip -n "$NS-n$i" addr add "$NET.1$i/24" dev eth0 ||
		notrun "cannot make node namespace $i"
done

# ---- munge: its own key and socket ----
mkdir -p "$T/munge" "$T/state" "$T/spool/n1" "$T/spool/n2" "$T/spool/n3"
chmod 700 "$T/munge"
head -c 1024 /dev/urandom >"$T/munge/key" && chmod 400 "$T/munge/key"
munged -f --key-file="$T/munge/key" --socket="$T/munge/sock" --pid-file="$T/munge/pid" \
	--log-file="$T/munge/log" --seed-file="$T/munge/seed" ||
	notrun "munged does not start: $(tail -1 "$T/munge/log" 2>/dev/null)"

# ---- slurm.conf: ports free on this host (the nodes' own stacks have every port free) ----
free_port() { local p; for _ in $(seq 50); do p=$((20000 + RANDOM % 10000)); ss -Htln | grep -q ":$p\$" || { echo $p; return; }; done; }
CPORT=$(free_port) DPORT=$(free_port)
cat >"$T/slurm.conf" <<EOF
ClusterName=pdkvci$ID
SlurmctldHost=pdkvctl($NET.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CPORT
SlurmdPort=$DPORT
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd-%n.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
NodeName=n1 NodeAddr=$NET.11 CPUs=4 RealMemory=1000 State=UNKNOWN
NodeName=n2 NodeAddr=$NET.12 CPUs=4 RealMemory=1000 State=UNKNOWN
NodeName=n3 NodeAddr=$NET.13 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=ci Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf
unset SLURM_JOB_ID SLURM_JOBID
unshare --uts sh -c "hostname pdkvctl && exec slurmctld -D -i -f $T/slurm.conf" >"$T/ctl.out" 2>&1 &
PIDS+=($!)
# nsenter keeps this host's /sys (ip netns exec remounts it, and slurmd wants its cgroup tree)
for i in 1 2 3; do
	nsenter --net="/run/netns/$NS-n$i" unshare --uts \
		sh -c "hostname n$i && exec slurmd -D -f $T/slurm.conf -N n$i" >"$T/d$i.out" 2>&1 &
	PIDS+=($!)
done
for _ in $(seq 100); do
	[ "$(sinfo -h -o '%t %D' 2>/dev/null)" = "idle 3" ] && break
	sleep 0.2
done
[ "$(sinfo -h -o '%t %D' 2>/dev/null)" = "idle 3" ] ||
	notrun "the Slurm cluster did not come up: $(sinfo -h 2>&1 | head -1); $(tail -2 "$T/d1.out" "$T/ctl.out" 2>/dev/null | tr '\n' ' ')"
ok "3-node Slurm cluster up ($(sinfo -h -o '%N %t'), $NET.11-13) in $(($(date +%s) - T0))s"

export VLLM_HOST_IP=127.0.0.1 MC_TCP_BIND_ADDRESS=127.0.0.1 # the runner's own: steps must not see them
leftovers() { # $1: the runner's pid; its srun processes here, any non-Slurm process on a node
	local i p
	pgrep -f -- "--job-name=pdkv-$1-" | sed 's/^/srun pid /'
	for i in 1 2 3; do
		for p in $(ip netns pids "$NS-n$i" 2>/dev/null); do
			case "$(cat "/proc/$p/comm" 2>/dev/null)" in slurmd | slurmstepd | "") ;; *) echo "n$i: $(tr '\0' ' ' <"/proc/$p/cmdline")" ;; esac
		done
	done
}

# ---- 1: 1P1D scenarios inside an allocation (salloc runs pdkv-run with SLURM_JOB_ID set) ----
salloc -N 3 --job-name=pdkvci "$BIN/pdkv-run" --launcher slurm --workdir "$T/w1" --timeout 60 \
	scenarios/30-netns-1p1d-v0.json scenarios/03-1p1d-tcp-http.json \
	scenarios/06-same-host-identical-urls.json \
	scenarios/60-v1-selftest-router-reuses-transfer-id.json \
	scenarios/hostile/40-fault-decode-killed.json scenarios/hostile/50-selftest-flood-lockout.json \
	>"$T/o1" 2>&1
rc=$?
grep -E 'PASS|FAIL|NOTRUN|slurm:' "$T/o1" | sed 's/^/    /'
check "1P1D (V0, etcd) through --launcher slurm inside an allocation: PASS (exit $rc)" \
	grep -qE '^netns-1p1d-v0 .*PASS' "$T/o1"
check "  prefill, decode, proxy on n1, n2, n3" grep -q 'netns-1p1d-v0: prefill on n1, decode on n2, proxy on n3' "$T/o1"
check "1P1D without \"hosts\" (pdkv metaserver) on nodes 1, 2, 3: PASS" \
	grep -qE '^1p1d-tcp-http-stream .*PASS' "$T/o1"
check "same-host scenario (mooncake URLs on 127.0.0.1): prefill and decode share a node, PASS" \
	grep -qE '^same-host-identical-urls .*PASS' "$T/o1"
check "router self-test (reused transfer_id, proxy on n3): PASS as locally" \
	grep -qE '^v1-selftest-router-reuses-transfer-id .*PASS' "$T/o1"
check "  output_equal caught it and names the reused id" \
	grep -q 'output_equal failed as it must: .*transfer_id xfer-.* was used by requests 0 and 1' "$T/o1"
check "decode SIGKILLed mid-run and restarted (40): PASS as locally (the KILL reaches n2's step)" \
	grep -qE '^fault-decode-killed .*PASS' "$T/o1"
check "a flood fault (50): NOTRUN, naming why (it reaches only processes on this host)" \
	grep -qE '^selftest-flood-lockout .*NOTRUN' "$T/o1"

# ---- 2: TP=2 with pdkv's own allocation (--slurm-args), logs kept ----
"$BIN/pdkv-run" --launcher slurm --slurm-args "-N 3 --job-name=pdkvci-tp2" --keep \
	--workdir "$T/w2" --timeout 60 scenarios/33-netns-v1-tp2-two-hosts.json >"$T/o2" 2>&1
rc=$?
grep -E 'PASS|FAIL|NOTRUN|slurm:' "$T/o2" | sed 's/^/    /'
check "TP=2 (gen B) through --launcher slurm --slurm-args: PASS (exit $rc)" \
	grep -qE '^netns-v1-tp2-two-hosts .*PASS' "$T/o2"
L=$T/w2/netns-v1-tp2-two-hosts
check "  each step's log is in the work dir" test -s "$L/prefill.log" -a -s "$L/decode.log" -a -s "$L/proxy.log"
check "  prefill's log says it ran on n1 ($NET.11)" grep -q "$NET.11" "$L/prefill.log"
check "  its own allocation is cancelled" test -z "$(squeue -h -n pdkvci-tp2)"

# ---- 3: a step killed mid-run: FAIL, no step, no process left ----
cat >"$T/slow.json" <<'EOF'
{ "name": "slurm-step-killed", "description": "1P1D V0, long enough to lose prefill's step mid-run",
  "metadata": "etcd", "hosts": { "prefill": "a", "decode": "b", "proxy": "c" },
  "mooncake": { "prefill_url": "${PREFILL_HOST}:${PORT_P}", "decode_url": "${DECODE_HOST}:${PORT_D}",
    "metadata_server": "${METADATA_HOSTPORT}", "protocol": "tcp", "device_name": "" },
  "standin_args": ["--kv-layers", "4", "--kv-heads", "2", "--head-dim", "64", "--dtype-bytes", "2", "--ns-per-token", "20000"],
  "workload": { "requests": 300, "concurrency": 2, "prompt_tokens": [2000], "max_tokens": 24 },
  "checks": ["http_ok", "kv_reused"] }
EOF
"$BIN/pdkv-run" --launcher slurm --slurm-args "-N 3 --job-name=pdkvci-kill" --workdir "$T/w3" \
	--timeout 40 "$T/slow.json" >"$T/o3" 2>&1 &
RUN=$!
step=
for _ in $(seq 150); do # prefill's step, once the proxy's is there too (the workload follows)
	step=$(squeue -h -s -o '%i %j' 2>/dev/null | awk '$2 ~ /-prefill$/ {print $1}')
	[ -n "$step" ] && squeue -h -s -o '%j' 2>/dev/null | grep -q -- '-proxy$' && break
	sleep 0.2
done
sleep 2
[ -n "$step" ] && scancel --signal=KILL "$step" 2>/dev/null
wait "$RUN"
rc=$?
grep -E 'PASS|FAIL|NOTRUN|slurm:' "$T/o3" | head -4 | sed 's/^/    /'
check "step $step killed mid-run: the run FAILs (exit $rc)" test "$rc" = 1 -a -n "$step"
grep -A3 'FAIL' "$T/o3" | sed -n 2,4p | cut -c1-200 | sed 's/^/    /'
check "  no step left (squeue -s empty)" test -z "$(squeue -h -s 2>/dev/null)"
check "  no job left" test -z "$(squeue -h 2>/dev/null)"
sleep 0.5
left=$(leftovers "$RUN")
check "  no process of the run left${left:+: $left}" test -z "$left"

# ---- 4: Ctrl-C (SIGINT) mid-run: exit 130, its steps and its allocation gone ----
"$BIN/pdkv-run" --launcher slurm --slurm-args "-N 3 --job-name=pdkvci-int" --workdir "$T/w4" \
	--timeout 40 "$T/slow.json" >"$T/o4" 2>&1 &
RUN=$!
for _ in $(seq 150); do
	squeue -h -s -o '%j' 2>/dev/null | grep -q -- '-proxy$' && break
	sleep 0.2
done
sleep 1
kill -INT "$RUN"
wait "$RUN"
rc=$?
check "SIGINT mid-run: pdkv run exits 130 (exit $rc)" test "$rc" = 130
check "  no step and no job left" test -z "$(squeue -h -s 2>/dev/null)$(squeue -h 2>/dev/null)"
sleep 0.5
left=$(leftovers "$RUN")
check "  no process of the run left${left:+: $left}" test -z "$left"

# ---- 6: link faults: a step on decode's node cuts its link (ip link down/up on its timer) ----
salloc -N 3 --job-name=pdkvci-link "$BIN/pdkv-run" --launcher slurm --workdir "$T/w6" --timeout 90 \
	--json "$T/r6.json" scenarios/hostile/31-netns-link-cut.json \
	scenarios/hostile/34-netns-link-down-for-good.json >"$T/o6" 2>&1
rc=$?
grep -E 'PASS|FAIL|NOTRUN|notrun|faults:|link ' "$T/o6" | cut -c1-260 | sed 's/^/    /'
check "link cut (31) through --launcher slurm: PASS, its 502s expected (exit $rc)" \
	grep -qE '^netns-link-cut .*(PASS|XFAIL)' "$T/o6"
check "  hostB's link (eth0 on n2) went down and came back up, by a step on n2" \
	grep -qE 'faults: link hostB down at \+0\.[4-9]s, up at \+3\.[4-9]s \(eth0 on node n2' "$T/o6"
check "  n2 answers again after the run" ping -c1 -W2 "$NET.12"
check "link down for good (34): NOTRUN, naming the missing \"up\"" \
	grep -qE '^netns-link-down-for-good .*NOTRUN' "$T/o6"
grep -q 'no later "up"' "$T/o6" || check "  the reason names it" false
salloc -N 1 --job-name=pdkvci-link1 "$BIN/pdkv-run" --launcher slurm --workdir "$T/w7" \
	scenarios/hostile/31-netns-link-cut.json >"$T/o7" 2>&1
grep -E 'NOTRUN|notrun|PASS|FAIL' "$T/o7" | head -3 | cut -c1-260 | sed 's/^/    /'
check "link cut on a 1-node allocation (every host on n1): NOTRUN, never a PASS without its cut" \
	grep -qE '^netns-link-cut .*NOTRUN' "$T/o7"

# ---- 5: pdkv accept --slurm over the 3 nodes: n2's link limited (tc tbf both ways), then clean ----
ACC=$BIN/pdkv-accept
# --threshold 0.3: the 200mbit link is ~0.03 x the fleet; this busy 2-core host's healthy pairs
# swing to ~0.6 x (a bad pair there would be host noise, not a finding)
ABARGS=(--threshold 0.3 -- --operation=write --block_size=64K --batch_size=16 --duration=0.5)
slow_n2() { # $1: add | del
	if [ "$1" = add ]; then
		ip netns exec "$NS-br" tc qdisc add dev p2 root tbf rate 200mbit burst 64kb latency 100ms &&
			nsenter --net="/run/netns/$NS-n2" tc qdisc add dev eth0 root tbf rate 200mbit burst 64kb latency 100ms
	else
		ip netns exec "$NS-br" tc qdisc del dev p2 root 2>/dev/null
		nsenter --net="/run/netns/$NS-n2" tc qdisc del dev eth0 root 2>/dev/null
	fi
}
if [ -x "$ACC" ] && command -v tc >/dev/null && slow_n2 add; then
	TA=$(date +%s)
	timeout 120 salloc -N 3 --job-name=pdkvci-acc "$ACC" --slurm --pairs all --check --repeat 2 \
		--json "$T/acc1.json" --workdir "$T/a1" "${ABARGS[@]}" >"$T/oa1" 2>&1
	rc=$?
	slow_n2 del
	grep -E '^(OUTLIER|node|verdict|#)|NOTRUN|error' "$T/oa1" | head -12 | sed 's/^/    /'
	check "accept --slurm, n2 slowed to 200mbit: exit 1 (outliers), got $rc ($(($(date +%s) - TA))s)" test "$rc" = 1
	check "  the table names n2, and only n2, as the outlier" \
		test "$(grep '^OUTLIER node ' "$T/oa1" | awk '{print $3}' | tr '\n' ' ')" = "n2 "
	check "  JSON: outliers.nodes = [n2], no wrong byte" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["outliers"]["nodes"] == ["n2"], d["outliers"]
assert all(p["wrong_bytes"] == 0 and p["failed_transfers"] == 0 for p in d["pairs"]), d["pairs"]' "$T/acc1.json"
	TA=$(date +%s)
	timeout 120 salloc -N 3 --job-name=pdkvci-acc "$ACC" --slurm --pairs ring --check \
		--json "$T/acc2.json" --workdir "$T/a2" "${ABARGS[@]}" >"$T/oa2" 2>&1
	rc=$?
	grep -E '^(OUTLIER|verdict)|NOTRUN|error' "$T/oa2" | head -6 | sed 's/^/    /'
	check "accept --slurm, no link slowed: exit 0, got $rc ($(($(date +%s) - TA))s)" test "$rc" = 0
	check "  no step and no job left" test -z "$(squeue -h -s 2>/dev/null)$(squeue -h 2>/dev/null)"
else
	echo "NOTRUN accept --slurm: pdkv-accept not built, tc missing, or tc tbf failed"
fi

echo "test_run_slurm: $(($(date +%s) - T0))s"
[ $fails = 0 ] && echo "PASS test_run_slurm" || echo "FAIL test_run_slurm ($fails)"
[ $fails = 0 ]
