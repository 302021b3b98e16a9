#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# rdma-accept.sh — hardware acceptance on real NICs: pdkv bench over RDMA between two hosts,
# reported per block size as GB/s, % of line rate (sum of the initiator ports' active speed x
# width, as pdkv bench reports it) and, with --compare-perftest, as a ratio to ib_write_bw run on the
# same device pairs in the same run. Also runs both roles on one host (--local) for rxe/CI.
#
#   host B:  ci/rxe/rdma-accept.sh target    --device_name=mlx5_0,mlx5_1 [--ip=B_IP] [--compare-perftest]
#   host A:  ci/rxe/rdma-accept.sh initiator --peer=B_IP --segment=SEG --device_name=mlx5_0,mlx5_1
#                                            [--ip=A_IP] [--compare-perftest] [--duration=S]
#            (--sizes="-b 64K -e 4M -f 4" block sweep; --buffer_size=BYTES per side, bench default 1 GiB)
#   (both sides: the same --sizes and --duration — perftest runs -s SIZE -D DURATION per size)
#   one host: ci/rxe/rdma-accept.sh --local --target_devices=rxe1 --target_ip=10.77.0.2 \
#                                   --device_name=rxe0 --ip=10.77.0.1 [--compare-perftest]
#   two hosts, one command from A (target on B through ssh, initiator here, perftest beside it):
#             ci/rxe/rdma-accept.sh two-host --hosts=hosts.txt --target_host=hostB \
#                 --target_devices=mlx5_0 --device_name=mlx5_0 [--target_ip=B_IP] [--ip=A_IP] \
#                 [--compare-perftest] [--ssh-key=FILE] [--dry-run]
#             hosts.txt is pdkv run --hosts' (NAME [USER@]ADDRESS [port=N] [pdkv=PATH] [K=V...]);
#             the target runs there as `PDKV bench --mode=target` under setsid nohup, with the same
#             ssh options as pdkv run's launcher (BatchMode, one ControlMaster, ConnectTimeout,
#             accept-new host keys in a private file); its log comes back, its process group is
#             stopped on every exit. --target_ip defaults to the host's hosts.txt address.
#             --dry-run prints the commands instead. (--protocol=tcp: the plumbing without NICs.)
# The target prints SEG (its segment name). Metadata: P2PHANDSHAKE (no store needed).
# The % of line rate and the perftest comparison are pdkv bench's own (--compare-perftest: the
# target keeps ib_write_bw servers per device on port 18515+i, the initiator runs the clients
# per block size after its rows); this script only starts both sides and tabulates the CSV.
set -u
BIN=${PDKV_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin}
MODE= DEVS= IP= PEER= SEG= PERF= DUR=5 TDEVS= TIP= BUF= SIZES="-b 64K -e 4M -f 4"
HOSTS= THOST= SSHKEY= DRY= PROTO=rdma
for a in "$@"; do
	case $a in
	target | initiator | two-host) MODE=$a ;;
	--hosts=*) HOSTS=${a#*=} ;;
	--target_host=*) THOST=${a#*=} ;;
	--ssh-key=*) SSHKEY=${a#*=} ;;
	--protocol=*) PROTO=${a#*=} ;;
	--dry-run) DRY=1 ;;
	--local) MODE=local ;;
	--device_name=*) DEVS=${a#*=} ;;
	--ip=*) IP=${a#*=} ;;
	--peer=*) PEER=${a#*=} ;;
	--segment=*) SEG=${a#*=} ;;
	--target_devices=*) TDEVS=${a#*=} ;;
	--target_ip=*) TIP=${a#*=} ;;
	--compare-perftest) PERF=1 ;;
	--duration=*) DUR=${a#*=} ;;
	--sizes=*) SIZES=${a#*=} ;;
	--buffer_size=*) BUF=${a#*=} ;;
	*) echo "rdma-accept: unknown argument \"$a\" (see the header of $0)" >&2; exit 2 ;;
	esac
done
[ -n "$MODE" ] && [ -n "$DEVS" ] || { echo "rdma-accept: need target|initiator|--local and --device_name" >&2; exit 2; }
T=$(mktemp -d /tmp/pdkv-accept.XXXXXX)
kids=()
cleanup() {
	for p in "${kids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ "$MODE" = two-host ] && remote_cleanup
	rm -rf "$T"
}
trap cleanup EXIT

PFLAGS=()
[ -n "$PERF" ] && PFLAGS=(--compare-perftest --perftest_duration="$DUR")
start_target() { # start_target DEVS IP -> sets seg (sizes: the same sweep as the initiator's)
	# shellcheck disable=SC2086
	MC_TCP_BIND_ADDRESS=$2 "$BIN/pdkv-bench" --mode=target --metadata_server=P2PHANDSHAKE \
		--protocol="$PROTO" --device_name="$1" ${BUF:+--buffer_size=$BUF} --ready_file="$T/ready" \
		$SIZES "${PFLAGS[@]}" >"$T/target.log" 2>&1 &
	kids+=($!)
	for _ in $(seq 300); do [ -s "$T/ready" ] && break; sleep 0.1; done
	[ -s "$T/ready" ] || { cat "$T/target.log"; echo "rdma-accept: target did not start" >&2; exit 1; }
	seg=$(head -1 "$T/ready")
}

if [ "$MODE" = target ]; then
	start_target "$DEVS" "$IP"
	echo "target ready: --segment=$seg (devices $DEVS${PERF:+, ib_write_bw servers on 18515+})"
	echo "Ctrl-C to stop."
	wait "${kids[0]}"
	exit 0
fi
if [ "$MODE" = two-host ]; then
	# shellcheck source=ci/rxe/remote-target.sh
	. "$(dirname "$0")/remote-target.sh"
	remote_start_target || exit $?
	SEG=$seg
	PEER=$TIP
elif [ "$MODE" = local ]; then
	[ -n "$TDEVS" ] && [ -n "$TIP" ] || { echo "rdma-accept: --local needs --target_devices and --target_ip" >&2; exit 2; }
	BUF=${BUF:-67108864}
	start_target "$TDEVS" "$TIP"
	SEG=$seg
	PEER=$TIP
else
	[ -n "$PEER" ] && [ -n "$SEG" ] || { echo "rdma-accept: initiator needs --peer and --segment" >&2; exit 2; }
fi

# shellcheck disable=SC2086
INIT=(env MC_TCP_BIND_ADDRESS="${IP:-}" "$BIN/pdkv-bench" --mode=initiator --metadata_server=P2PHANDSHAKE \
	--segment_id="$SEG" --protocol="$PROTO" --device_name="$DEVS" --operation=write $SIZES ${BUF:+--buffer_size=$BUF} \
	--batch_size=128 --duration="$DUR" --report_unit=GB --report_precision=3 --check --csv="$T/bench.csv" \
	${PERF:+--perftest_host="$PEER"} "${PFLAGS[@]}")
if [ -n "$DRY" ]; then
	printf '+ here:'; printf ' %q' "${INIT[@]}"; echo
	exit 0
fi
"${INIT[@]}" >"$T/bench.log" 2>&1
rc=$?
[ $rc = 0 ] || [ "$MODE" != two-host ] || remote_cleanup # its log is needed below
[ $rc = 0 ] || { tail -20 "$T/bench.log"; cat "$T/target.log" 2>/dev/null | tail -5; echo "rdma-accept: pdkv bench failed (rc=$rc)"; exit 1; }
LR=$(awk -F, 'NR > 1 && $18 != "" { printf "%.3f", $18 / 8; exit }' "$T/bench.csv")
echo "pdkv RDMA acceptance: initiator $DEVS -> segment $SEG; line rate ${LR:-unknown} GB/s"
grep -E '^# (ib_write_bw|ratio pdkv/ib_write_bw)' "$T/bench.log"
printf '%-10s %10s %12s %14s\n' "block" "GB/s" "% line rate" "vs ib_write_bw"
awk -F, 'NR > 1 && $1 == "pdkv" {
	printf "%-10d %10.3f %12s %14s\n", $3, $10, ($19 == "" ? "-" : sprintf("%.1f%%", $19)),
		($21 == "" ? "-" : sprintf("%.0f%%", $21 * 100)) }' "$T/bench.csv"
echo "(reference: Mooncake reports 71.1% of line rate for vLLM 1P1D on 8x RoCE; perftest is the per-NIC ceiling)"
