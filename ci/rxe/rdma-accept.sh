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
#            (--sizes="-b 4K -e 16M -f 4" block sweep; --buffer_size=BYTES per side, bench default 1 GiB;
#             batch 128 requests, fewer above 2 MiB blocks: at most 256 MiB in flight)
#   --latency (every mode): also pdkv bench --latency (one request in flight, --iterations=N per
#             size, --lat_sizes="-b 8 -e 64K -f 2") beside ib_write_lat/ib_read_lat; --local and
#             two-host restart the target for it; target/initiator: run both sides with --latency
#             (then only the latency table is measured)
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
# per block size after its rows); this script only starts both sides and prints three tables:
# per-size bandwidth, the aggregate over --device_name with each device's share, and (with
# --latency) p50/p99/max against ib_write_lat / ib_read_lat.
set -u
BIN=${PDKV_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin}
MODE= DEVS= IP= PEER= SEG= PERF= DUR=5 TDEVS= TIP= BUF= SIZES="-b 4K -e 16M -f 4"
HOSTS= THOST= SSHKEY= DRY= PROTO=rdma ONLYLAT= LAT= ITERS=1000 LSIZES="-b 8 -e 64K -f 2"
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
	--latency) LAT=1 ;;
	--iterations=*) ITERS=${a#*=} ;;
	--lat_sizes=*) LSIZES=${a#*=} ;;
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

if [ -n "$LAT" ] && { [ "$MODE" = target ] || [ "$MODE" = initiator ]; }; then
	# a target/initiator pair run with --latency measures only the latency table
	PFLAGS=(--latency --operation=write,read --iterations="$ITERS" ${PERF:+--compare-perftest})
	SIZES=$LSIZES
	ONLYLAT=1
fi
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

# bytes in flight per batch: 128 requests, fewer for large blocks (at most 256 MiB per side)
to_bytes() { awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)))
	if (u == "K") m = 1024; else if (u == "M") m = 1048576; else if (u == "G") m = 1073741824
	if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d", s * m }'; }
E=$(set -- $SIZES; while [ $# -gt 0 ]; do [ "$1" = -e ] && { echo "$2"; break; }; shift; done)
BATCH=128
[ -n "$E" ] && [ "$(to_bytes "$E")" -gt 0 ] && BATCH=$((268435456 / $(to_bytes "$E")))
[ "$BATCH" -gt 128 ] && BATCH=128
[ "$BATCH" -lt 1 ] && BATCH=1
init_cmd() { # INIT for target segment $1
	INIT=(env MC_TCP_BIND_ADDRESS="${IP:-}" "$BIN/pdkv-bench" --mode=initiator \
		--metadata_server=P2PHANDSHAKE --segment_id="$1" --protocol="$PROTO" --device_name="$DEVS")
	[ -n "$PERF" ] && INIT+=(--perftest_host="$PEER")
}
init_cmd "$SEG"
BWRUN=(--operation=write $SIZES ${BUF:+--buffer_size=$BUF} --batch_size="$BATCH" --duration="$DUR" \
	--report_unit=GB --report_precision=3 --check --csv="$T/bench.csv" --json="$T/bench.json" "${PFLAGS[@]}")
LATRUN=(--latency --operation=write,read --iterations="$ITERS" $LSIZES --json="$T/lat.json" \
	${PERF:+--compare-perftest})
lat_table() { # the latency run and its table
	"${INIT[@]}" "${LATRUN[@]}" >"$T/lat.log" 2>&1 ||
		{ tail -20 "$T/lat.log"; echo "rdma-accept: pdkv bench --latency failed"; return 1; }
	echo "== latency (one request in flight, $ITERS per size; us)"
	grep -E '^(# kind|  pdkv)' "$T/lat.log"
	sed -n '/^# latency table/,$p' "$T/lat.log" | grep -E '^(#|  )' | grep -v '^# perftest'
}
if [ -n "$DRY" ]; then
	[ -z "$ONLYLAT" ] && { printf '+ here:'; printf ' %q' "${INIT[@]}" "${BWRUN[@]}"; echo; }
	[ -n "$LAT" ] && { printf '+ here:'; printf ' %q' "${INIT[@]}" "${LATRUN[@]}"; echo; }
	exit 0
fi
if [ -n "$ONLYLAT" ]; then
	lat_table
	exit $?
fi
"${INIT[@]}" "${BWRUN[@]}" >"$T/bench.log" 2>&1
rc=$?
[ $rc = 0 ] || [ "$MODE" != two-host ] || remote_cleanup # its log is needed below
[ $rc = 0 ] || { tail -20 "$T/bench.log"; cat "$T/target.log" 2>/dev/null | tail -5; echo "rdma-accept: pdkv bench failed (rc=$rc)"; exit 1; }
LR=$(awk -F, 'NR > 1 && $18 != "" { printf "%.3f", $18 / 8; exit }' "$T/bench.csv")
echo "pdkv RDMA acceptance: initiator $DEVS -> segment $SEG; line rate ${LR:-unknown} GB/s"
grep -E '^# (ib_write_bw|ratio pdkv/ib_write_bw)' "$T/bench.log"
echo "== per-size bandwidth (WRITE, batch $BATCH, --check; vs ib_write_bw on the same device pairs, same run)"
printf '%-10s %10s %12s %14s\n' "block" "GB/s" "% line rate" "vs ib_write_bw"
awk -F, 'NR > 1 && $1 == "pdkv" {
	printf "%-10d %10.3f %12s %14s\n", $3, $10, ($19 == "" ? "-" : sprintf("%.1f%%", $19)),
		($21 == "" ? "-" : sprintf("%.0f%%", $21 * 100)) }' "$T/bench.csv"
echo "== aggregate over $DEVS (ib_write_bw: one per device pair at the same time, summed)"
python3 - "$T/bench.json" <<'PY' || echo "(aggregate table: python3 needed)"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "pdkv"]
print("%-10s %10s %16s %8s  %s" % ("block", "GB/s", "ib_write_bw sum", "ratio", "share per device (moved slices)"))
for r in rows:
    pt = r.get("ib_write_bw", 0)
    devs = r.get("devices") or []
    sh = ", ".join("%s %.1f%% (%d)" % (d["name"], d["share"] * 100, d["slices_moved_out"]) for d in devs) \
        or "one device"
    print("%-10d %10.3f %16s %8s  %s" % (r["block_size"], r["bandwidth"], "%.3f" % pt if pt else "-",
          "%.0f%%" % (r["bandwidth"] / pt * 100) if pt else "-", sh))
PY
if [ -n "$LAT" ]; then
	if [ "$MODE" = local ] || [ "$MODE" = two-host ]; then # the target again, with ib_*_lat servers
		PFLAGS=(--latency --operation=write,read --iterations="$ITERS" ${PERF:+--compare-perftest})
		SIZES=$LSIZES
		if [ "$MODE" = local ]; then
			kill "${kids[0]}" 2>/dev/null; wait "${kids[0]}" 2>/dev/null; kids=()
			rm -f "$T/ready"; start_target "$TDEVS" "$TIP"
		else
			remote_cleanup; remote_start_target || exit $?
		fi
		init_cmd "$seg"
	fi
	lat_table || exit 1
fi
echo "(reference: Mooncake reports 71.1% of line rate for vLLM 1P1D on 8x RoCE; perftest is the per-NIC ceiling)"
