#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-rxe-tier.sh — pdkv's Soft-RoCE tier: boots a throw-away qemu guest with two rxe devices
# (rxe0 10.77.0.1, rxe1 10.77.0.2; see run-in-rxe-vm.sh for what the guest can and cannot do) and
# runs ci/rxe/tier-guest.sh in it: the engine's RDMA tests (READ+WRITE both ways, data verified,
# error paths), pdkv bench --protocol=rdma --check, ib_write_bw on the same pair and pdkv's
# bandwidth as a ratio to it. One line per step, then "rxe tier: PASS|FAIL|NOTRUN".
# Exit: 0 pass, 1 fail, 77 NOTRUN (no qemu, no guest kernel obtainable) — never a silent pass.
# Usage: [BUILD=build] [RXE_BW_MB=32] [RXE_ROUNDS=3] ci/rxe/run-rxe-tier.sh   (after `make`; `make test-rxe`)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT" || exit 1
export BUILD=${BUILD:-build}
export RXE_BW_MB=${RXE_BW_MB:-32} RXE_BENCH_S=${RXE_BENCH_S:-2} RXE_ROUNDS=${RXE_ROUNDS:-3}
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
notrun() {
	echo "NOTRUN rxe_guest: $*"
	echo "rxe tier: NOTRUN ($*) wall $(elapsed)s"
	exit 77
}

command -v qemu-system-x86_64 >/dev/null 2>&1 ||
	notrun "qemu-system-x86_64 not installed (bash ci/install-deps.sh installs qemu-system-x86)"
[ -x /bin/busybox ] || notrun "static busybox missing (bash ci/install-deps.sh installs busybox-static)"
ls "$BUILD"/tests/test_rdma_* >/dev/null 2>&1 ||
	{ echo "FAIL build: no $BUILD/tests/test_rdma_* (run make first)"; echo "rxe tier: FAIL"; exit 1; }

# guest kernel: Debian's linux-image package, fetched once into /tmp/rxevm
if ! prep=$(RXEVM_PREPARE_ONLY=1 bash "$HERE/run-in-rxe-vm.sh" true 2>&1); then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
	$SUDO apt-get update -qq >/dev/null 2>&1
	prep=$(RXEVM_PREPARE_ONLY=1 bash "$HERE/run-in-rxe-vm.sh" true 2>&1) ||
		notrun "guest kernel not obtainable: $(echo "$prep" | tail -1)"
fi
echo "PASS rxe_guest_prepare ($(elapsed)s) kernel $(cat /tmp/rxevm/default-kpkg 2>/dev/null)"

LOG=${RXE_LOG:-$BUILD/test-logs/rxe-tier.log}
mkdir -p "$(dirname "$LOG")"
RXEVM_SETUP=pair RXEVM_TIMING=1 RXEVM_TIMEOUT=${RXE_TIMEOUT:-600} RXEVM_PASSENV="BUILD RXE_BW_MB RXE_BENCH_S RXE_ROUNDS RXE_LAT_ITERS RXE_LAT_ROUNDS RXE_SIZE_S RXE_MD_S RXE_FAULT_AT RXE_ONLY" \
	bash "$HERE/run-in-rxe-vm.sh" 'bash ci/rxe/tier-guest.sh' 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
if ! grep -q '^rxe tier: ' "$LOG"; then
	# the guest never reached the tier script: a harness failure, reported as FAIL (not a pass)
	echo "FAIL rxe_guest: the guest did not run the tier (rc=$rc; log $LOG)"
	rc=1
fi
echo "rxe tier wall time: $(elapsed)s (log $LOG)"
[ "$rc" = 0 ] && exit 0
exit 1
