#!/bin/bash
# rdma-accept.sh — hardware acceptance on real NICs: pdkv bench over RDMA between two hosts,
# reported per block size as GB/s, % of line rate (sum of the initiator ports' active speed x
# width, from pdkv doctor) and, with --compare-perftest, as a ratio to ib_write_bw run on the
# same device pairs in the same run. Also runs both roles on one host (--local) for rxe/CI.
#
#   host B:  ci/rxe/rdma-accept.sh target    --device_name=mlx5_0,mlx5_1 [--ip=B_IP] [--compare-perftest]
#   host A:  ci/rxe/rdma-accept.sh initiator --peer=B_IP --segment=SEG --device_name=mlx5_0,mlx5_1
#                                            [--ip=A_IP] [--compare-perftest] [--duration=S]
#            (--sizes="-b 64K -e 4M -f 4" block sweep; --buffer_size=BYTES per side, bench default 1 GiB)
#   one host: ci/rxe/rdma-accept.sh --local --target_devices=rxe1 --target_ip=10.77.0.2 \
#                                   --device_name=rxe0 --ip=10.77.0.1 [--compare-perftest]
# The target prints SEG (its segment name). Metadata: P2PHANDSHAKE (no store needed).
# perftest pairs device i of the initiator with device i of the target, port 18515+i, in parallel.
set -u
BIN=${PDKV_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin}
MODE= DEVS= IP= PEER= SEG= PERF= DUR=5 TDEVS= TIP= BUF= SIZES="-b 64K -e 4M -f 4"
for a in "$@"; do
	case $a in
	target | initiator) MODE=$a ;;
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
IFS=, read -r -a DEV <<<"$DEVS"
T=$(mktemp -d /tmp/pdkv-accept.XXXXXX)
kids=()
cleanup() { for p in "${kids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT

perf_servers() { # perf_servers DEV...  (ib_write_bw servers, one per device, ports 18515+i)
	local i=0 d
	for d in "$@"; do
		ib_write_bw -d "$d" -p $((18515 + i)) -s 65536 -D "$DUR" -F >"$T/perf-srv$i.log" 2>&1 &
		kids+=($!)
		i=$((i + 1))
	done
}
perf_clients() { # perf_clients PEER DEV... -> total MB/s (1e6) on stdout
	local peer=$1 i=0 d pids=()
	shift
	for d in "$@"; do
		ib_write_bw -d "$d" -p $((18515 + i)) -s 65536 -D "$DUR" -F "$peer" >"$T/perf$i.log" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	wait "${pids[@]}"
	cat "$T"/perf[0-9]*.log | awk '$1 == 65536 && NF >= 5 { s += $4 * 1.048576 } END { printf "%.1f", s }'
}
line_rate() { # line_rate DEVLIST -> GB/s summed over the devices' ports (pdkv doctor)
	"$BIN/pdkv-doctor" --device_name="$1" 2>/dev/null |
		awk '/line rate/ { for (i = 1; i <= NF; i++) if ($(i+1) == "GB/s") s += $i } END { printf "%.3f", s }'
}
start_target() { # start_target DEVS IP -> sets seg
	MC_TCP_BIND_ADDRESS=$2 "$BIN/pdkv-bench" --mode=target --metadata_server=P2PHANDSHAKE \
		--protocol=rdma --device_name="$1" ${BUF:+--buffer_size=$BUF} --ready_file="$T/ready" \
		>"$T/target.log" 2>&1 &
	kids+=($!)
	for _ in $(seq 300); do [ -s "$T/ready" ] && break; sleep 0.1; done
	[ -s "$T/ready" ] || { cat "$T/target.log"; echo "rdma-accept: target did not start" >&2; exit 1; }
	seg=$(head -1 "$T/ready")
}

if [ "$MODE" = target ]; then
	start_target "$DEVS" "$IP"
	[ -n "$PERF" ] && perf_servers "${DEV[@]}"
	echo "target ready: --segment=$seg (devices $DEVS${PERF:+, ib_write_bw servers on 18515+})"
	echo "line rate here: $(line_rate "$DEVS") GB/s. Ctrl-C to stop."
	wait "${kids[0]}"
	exit 0
fi
if [ "$MODE" = local ]; then
	[ -n "$TDEVS" ] && [ -n "$TIP" ] || { echo "rdma-accept: --local needs --target_devices and --target_ip" >&2; exit 2; }
	BUF=${BUF:-67108864}
	start_target "$TDEVS" "$TIP"
	SEG=$seg
	PEER=$TIP
	IFS=, read -r -a TDEV <<<"$TDEVS"
else
	[ -n "$PEER" ] && [ -n "$SEG" ] || { echo "rdma-accept: initiator needs --peer and --segment" >&2; exit 2; }
fi

LR=$(line_rate "$DEVS")
MC_TCP_BIND_ADDRESS=${IP:-} "$BIN/pdkv-bench" --mode=initiator --metadata_server=P2PHANDSHAKE \
	--segment_id="$SEG" --protocol=rdma --device_name="$DEVS" --operation=write $SIZES ${BUF:+--buffer_size=$BUF} \
	--batch_size=128 --duration="$DUR" --report_unit=GB --check --csv="$T/bench.csv" >"$T/bench.log" 2>&1
rc=$?
[ $rc = 0 ] || { tail -20 "$T/bench.log"; echo "rdma-accept: pdkv bench failed (rc=$rc)"; exit 1; }
PB=
if [ -n "$PERF" ]; then
	for try in 1 2; do # perftest on a loaded host occasionally fails to connect: once more
		[ "$MODE" = local ] && { perf_servers "${TDEV[@]}"; sleep 2; }
		rm -f "$T"/perf[0-9]*.log
		PB=$(perf_clients "$PEER" "${DEV[@]}")
		awk -v p="$PB" 'BEGIN{exit !(p > 0)}' && break
		echo "rdma-accept: ib_write_bw attempt $try failed: $(tail -2 "$T"/perf0.log 2>/dev/null | tr '\n' ' ')"
		[ "$MODE" = local ] || break
	done
fi
echo "pdkv RDMA acceptance: initiator $DEVS -> segment $SEG; line rate $LR GB/s${PB:+; ib_write_bw ${PB} MB/s}"
printf '%-10s %10s %12s %14s\n' "block" "GB/s" "% line rate" "vs ib_write_bw"
awk -F, -v lr="$LR" -v pb="${PB:-0}" 'NR > 1 && $1 == "pdkv" {
	printf "%-10d %10.3f %11.1f%% %14s\n", $3, $10, (lr > 0 ? $10 / lr * 100 : 0),
		(pb > 0 ? sprintf("%.0f%%", $10 * 1000 / pb * 100) : "-") }' "$T/bench.csv"
echo "(reference: Mooncake reports 71.1% of line rate for vLLM 1P1D on 8x RoCE; perftest is the per-NIC ceiling)"
