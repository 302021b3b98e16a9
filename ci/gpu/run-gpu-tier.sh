#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-gpu-tier.sh — pdkv's GPU tier (`make test-gpu`): the CUDA unit tests (TCP staging, the
# nvlink_intra CUDA-IPC transport between two processes, the GPU fill kernel), pdkv bench
# --use_vram on one GPU (nvlink_intra and tcp, data checked, then the ratio runs) and across two
# GPUs, and the 1P1D GPU scenarios (scenarios/gpu, KV blocks in GPU memory) with their hand-off
# goodput beside pdkv bench's. One line per step, the ratio lines pdkv bench printed, then
# "gpu tier: PASS|FAIL|NOTRUN". Exit: 0 pass, 1 fail, 77 NOTRUN (no CUDA device or runtime).
# Usage: [BUILD=build] [GPU_BENCH_S=1] [GPU_BATCH=16] ci/gpu/run-gpu-tier.sh   (after `make`)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
B=$BUILD/bin/pdkv-bench
S=${GPU_BENCH_S:-1}
BATCH=${GPU_BATCH:-16}
LOG=${GPU_LOG:-$BUILD/test-logs/gpu-tier}
HANDOFF_GOAL=0.80 # the 1P1D hand-off after the first, against the paced bench (issue 33)
mkdir -p "$LOG"
fails=0 notruns=0

step() { # name, command...: PASS/FAIL/NOTRUN(77) with the log's last line
	local name=$1 rc t0
	shift
	t0=$(date +%s.%N)
	timeout "${GPU_STEP_S:-240}" "$@" >"$LOG/$name.log" 2>&1
	rc=$?
	local dt
	dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	case $rc in
	0) echo "PASS $name (${dt}s)" ;;
	77) echo "NOTRUN $name: $(grep -m1 -iE 'skip|notrun|no cuda' "$LOG/$name.log" || tail -1 "$LOG/$name.log")"
	    notruns=$((notruns + 1)) ;;
	124) echo "FAIL $name: still running after ${GPU_STEP_S:-240}s (killed): $(tail -2 "$LOG/$name.log" | tr '\n' ' ')"
	   fails=$((fails + 1)) ;;
	*) echo "FAIL $name (rc $rc, ${dt}s): $(tail -3 "$LOG/$name.log" | tr '\n' ' ')"
	   fails=$((fails + 1)) ;;
	esac
	return $rc
}

for t in test_te_gpu test_te_ipc test_te_ipc_desc; do
	[ -x "$BUILD/tests/$t" ] || { echo "FAIL build: no $BUILD/tests/$t (run make first)"; echo "gpu tier: FAIL"; exit 1; }
done
# No CUDA: the first test says why; the whole tier is NOTRUN
"$BUILD/tests/test_te_gpu" >"$LOG/probe.log" 2>&1
if [ $? -eq 77 ]; then
	echo "NOTRUN gpu: $(grep -m1 SKIP "$LOG/probe.log")"
	echo "gpu tier: NOTRUN (no CUDA device)"
	exit 77
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${ngpu:-0}" -ge 1 ] || ngpu=1
echo "INFO $ngpu CUDA device(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

step test_te_gpu "$BUILD/tests/test_te_gpu"
step test_te_ipc "$BUILD/tests/test_te_ipc"
step test_te_ipc_desc "$BUILD/tests/test_te_ipc_desc"
if [ -x "$BUILD/tests/test_gpu_fill" ]; then
	step test_gpu_fill "$BUILD/tests/test_gpu_fill"
else
	echo "NOTRUN test_gpu_fill: not built (needs nvcc at build time)"
	notruns=$((notruns + 1))
fi

BENCH=("$B" --mode=loopback --use_vram --operation=write,read --batch_size="$BATCH" --duration="$S")
# data first (--check), then the ratio runs: 64 KiB .. 64 MiB
step bench_check_nvlink_intra "${BENCH[@]}" --protocol=nvlink_intra -b 65536 -e 4194304 -f 64 --check
step bench_check_tcp_vram "${BENCH[@]}" --protocol=tcp -b 65536 -e 4194304 -f 64 --check
step bench_nvlink_intra "${BENCH[@]}" --protocol=nvlink_intra -b 65536 -e 67108864 -f 4 --json "$LOG/bench-ipc.json"
step bench_tcp_vram "${BENCH[@]}" --protocol=tcp -b 65536 -e 67108864 -f 4 --json "$LOG/bench-tcp.json"
if [ "$ngpu" -ge 2 ]; then
	step bench_two_gpus_nvlink_intra "${BENCH[@]}" --protocol=nvlink_intra --gpu_id=0 --target_gpu_id=1 \
		-b 65536 -e 67108864 -f 4 --check
else
	echo "NOTRUN bench_two_gpus: $ngpu CUDA device here (cudaMemcpyPeer between two GPUs needs two)"
	notruns=$((notruns + 1))
fi
# 1P1D with the KV blocks in GPU memory (V1 gen B, --kv-cache-device), over nvlink_intra and tcp;
# then pdkv bench WRITE (the prefill writes into the decode's blocks) with the descriptor size and
# count the scenario's hand-offs had, on the same GPUs: the hand-off goodput vs the bench.
# Like for like: the scenario's processes and the bench it is compared with run on the CPUs next
# to GPU 0 (its PCI device's local_cpulist, as numactl --cpunodebind would), so neither lands on
# a far NUMA node for some runs and not others. GPU_PIN=0: unpinned.
PIN=()
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1 | tr 'A-F' 'a-f')
bus=${bus#0000}
cpus=$( [ -n "$bus" ] && cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null)
if [ "${GPU_PIN:-1}" = 1 ] && [ -n "$cpus" ] && command -v taskset >/dev/null &&
	[ "$(taskset -c -p $$ 2>/dev/null | awk '{print $NF}')" != "$cpus" ]; then
	PIN=(taskset -c "$cpus")
	echo "INFO scenario_1p1d_gpu and bench_handoff: on GPU 0's local CPUs $cpus (GPU_PIN=0: unpinned)"
else
	echo "INFO scenario_1p1d_gpu and bench_handoff: unpinned (GPU 0's local CPUs: ${cpus:-unknown})"
fi
if [ "$ngpu" -ge 2 ]; then
	sfx=-2gpu tgt=(--gpu_id=0 --target_gpu_id=1)
	echo "INFO scenario_1p1d_gpu: prefill on GPU 0, decode on GPU 1"
else
	sfx= tgt=()
	echo "INFO scenario_1p1d_gpu: one GPU here: prefill and decode both keep their KV on GPU 0"
fi
# nvlink_intra, where the goal is judged, runs GPU_HANDOFF_ROUNDS (3) rounds of scenario + paced
# bench: one run's ratio moved 0.66-1.21 between runs on one H100 host (2026-12-06), as the
# CUDA copy submission of both sides did; tcp runs once, for the record.
ROUNDS=${GPU_HANDOFF_ROUNDS:-3}
for p in nvlink tcp; do
	proto=tcp nr=1
	[ $p = nvlink ] && proto=nvlink_intra nr=$ROUNDS
	for i in $(seq 1 "$nr"); do
		sc=$LOG/scenario-$p-$i.json run=$LOG/run-$p-$i
		rm -f "$sc"
		rm -rf "$run"
		step scenario_1p1d_gpu_${p}_$i "${PIN[@]}" "$BUILD/bin/pdkv" run --keep --workdir "$run" \
			--json "$sc" "scenarios/gpu/1p1d-gpu-v1-$p$sfx.json" || continue
		# descriptor size and descriptors per hand-off (prefill's MooncakePromMetrics)
		read -r blk nd < <(python3 "$HERE/handoff.py" shape "$sc" 2>/dev/null) ||
			{ blk=1048576 nd=56; }
		[ "$i" = 1 ] && step bench_handoff_$p "${PIN[@]}" "$B" --mode=loopback --use_vram \
			--protocol=$proto --operation=write --batch_size="$nd" --duration="$S" -b "$blk" \
			-e "$blk" -f 2 "${tgt[@]}" --json "$LOG/bench-handoff-$p.json"
		# like for like: the bench's batches as far apart as the scenario's hand-offs (an
		# engine that idles between hand-offs submits slower than a hot loop), each of its
		# nd transfers between allocations of their own, as the stand-ins' per-layer KV
		# buffers are (CUDA queues a copy slower when each one touches another allocation)
		gap=$(python3 "$HERE/handoff.py" gap "$run"/*/prefill.log 2>/dev/null) || gap=
		[ -n "$gap" ] && step bench_handoff_paced_${p}_$i "${PIN[@]}" "$B" --mode=loopback \
			--use_vram --protocol=$proto --operation=write --batch_size="$nd" --duration="$S" \
			-b "$blk" -e "$blk" -f 2 --gap-ms="$gap" --buffers="$nd" "${tgt[@]}" \
			--json "$LOG/bench-handoff-paced-$p-$i.json"
		echo "INFO bench_handoff_paced_${p}_$i: ${gap:-?} ms between batches (the scenario's median gap)"
	done
done

echo "--- ratios (pdkv bench, this run)"
cat "$LOG"/bench_nvlink_intra.log "$LOG"/bench_tcp_vram.log "$LOG"/bench_two_gpus_nvlink_intra.log 2>/dev/null |
	grep -E '^# (ratio|cudaMemcpy)' |
	awk '/^# ratio/ {n=$NF; printf "%s  [goal >= 0.90: %s]\n", $0, (n >= 0.90 ? "met" : "not met"); next} {print}'
# shellcheck source=../rxe/judge.sh
. "$ROOT/ci/rxe/judge.sh"
for p in nvlink tcp; do
	nr=1
	[ $p = nvlink ] && nr=$ROUNDS
	[ -s "$LOG/scenario-$p-1.json" ] && [ -s "$LOG/bench-handoff-$p.json" ] &&
		python3 "$HERE/handoff.py" ratio "$LOG/scenario-$p-1.json" "$LOG/bench-handoff-$p.json" \
			"$LOG"/run-$p-1/*/prefill.log "hot loop"
	ratios="" refs=""
	for i in $(seq 1 "$nr"); do
		[ -s "$LOG/scenario-$p-$i.json" ] && [ -s "$LOG/bench-handoff-paced-$p-$i.json" ] || continue
		out=$(python3 "$HERE/handoff.py" ratio "$LOG/scenario-$p-$i.json" \
			"$LOG/bench-handoff-paced-$p-$i.json" "$LOG"/run-$p-$i/*/prefill.log "paced, round $i")
		echo "$out"
		r=$(echo "$out" | awk '/after the first/ {print $NF}')
		ref=$(echo "$out" | awk '/after the first/ {for (k = 1; k < NF; k++) if ($k == "GB/s") {print $(k - 1); exit}}')
		[ -n "$r" ] && ratios="$ratios $(awk -v r="$r" 'BEGIN{printf "%.1f", r * 100}')"
		[ -n "$ref" ] && refs="$refs $ref"
	done
	# tcp staging is printed for the record; the goal is judged over nvlink_intra, where the
	# copies are the device's own: the median of the rounds against the goal, NOTRUN when the
	# paced bench itself (or the rounds' ratios) spread more than 20 % CV or the median misses
	# the goal by less than twice that spread (ci/rxe/judge.sh, the Soft-RoCE tier's rule)
	[ "$p" = nvlink ] || continue
	v=$(rxe_judge --ratios="${ratios# }" --expect="$nr" --goal="$(awk -v g="$HANDOFF_GOAL" 'BEGIN{print g * 100}')" \
		--refs="${refs# }" --ref="the paced pdkv bench" --max=150)
	rc=$?
	echo "${v%% *} handoff_ratio_$p: hand-off after the first / paced bench, rounds${ratios:- none} % (goal >= $HANDOFF_GOAL): ${v#* }"
	case $rc in
	0) ;;
	77) notruns=$((notruns + 1)) ;;
	*) fails=$((fails + 1)) ;;
	esac
done
if [ "$fails" -gt 0 ]; then
	echo "gpu tier: FAIL ($fails failed, $notruns NOTRUN; logs in $LOG)"
	exit 1
fi
echo "gpu tier: PASS ($notruns NOTRUN; logs in $LOG)"
exit 0
