#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-pair.sh — `pdkv bench` between two processes on two devices of one host (the rxe guest,
# or two NICs of one machine): a target on TDEV/TIP and an initiator on IDEV/IIP, P2PHANDSHAKE,
# WRITE then READ of 64 KiB blocks with --check. Prints the bench output and, last,
# "pair-bw: <write MB/s> <read MB/s>" (MB = 1e6 bytes). Exit = the initiator's exit code.
# Usage: bench-pair.sh PROTOCOL TDEV TIP IDEV IIP [SECONDS] [extra initiator flags...]
set -u
[ $# -ge 5 ] || { echo "usage: $0 PROTOCOL TDEV TIP IDEV IIP [SECONDS] [flags...]" >&2; exit 2; }
PROTO=$1 TDEV=$2 TIP=$3 IDEV=$4 IIP=$5
DUR=${6:-3}
shift $(($# < 6 ? $# : 6))
BIN=${PDKV_BIN:-build/bin}
D=$(mktemp -d /tmp/pdkv-bench-pair.XXXXXX)
tp=
cleanup() { [ -n "$tp" ] && kill "$tp" 2>/dev/null && wait "$tp" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT

MC_TCP_BIND_ADDRESS=$TIP "$BIN/pdkv-bench" --mode=target --metadata_server=P2PHANDSHAKE \
	--protocol="$PROTO" --device_name="$TDEV" --buffer_size=67108864 \
	--ready_file="$D/ready" >"$D/target.log" 2>&1 &
tp=$!
for _ in $(seq 300); do [ -s "$D/ready" ] && break; kill -0 $tp 2>/dev/null || break; sleep 0.1; done
if [ ! -s "$D/ready" ]; then
	echo "bench-pair: the target did not come up; its log:"
	cat "$D/target.log"
	exit 1
fi
SEG=$(head -1 "$D/ready")
echo "bench-pair: target $SEG on $TDEV, initiator on $IDEV ($PROTO, ${DUR}s per operation)"
MC_TCP_BIND_ADDRESS=$IIP "$BIN/pdkv-bench" --mode=initiator --metadata_server=P2PHANDSHAKE \
	--segment_id="$SEG" --protocol="$PROTO" --device_name="$IDEV" --operation=write,read \
	--block_size=65536 --batch_size=128 --buffer_size=67108864 --duration="$DUR" --report_unit=MB --check \
	--csv="$D/bench.csv" "$@"
rc=$?
awk -F, 'NR > 1 && $1 == "pdkv" { bw[$2] = $10 }
	END { printf "pair-bw: %s %s\n", (bw["write"] == "" ? "?" : bw["write"]), (bw["read"] == "" ? "?" : bw["read"]) }' \
	"$D/bench.csv" 2>/dev/null || echo "pair-bw: ? ?"
exit $rc
