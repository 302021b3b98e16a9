#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_bench_multidev: the multi-device and per-size flags of pdkv bench that need no NIC —
# --fault-device-down's form and context (exit 2 naming what is expected), and --max_inflight's
# batch per size over TCP loopback (JSON batch_size = min(--batch_size, BYTES / block)). The
# device-down run itself needs two RDMA devices: the Soft-RoCE tier runs it (ci/rxe).
set -u
. ci/testlib.sh
BIN=${PDKV_BIN:-build/bin}
B="$BIN/pdkv-bench"
export MC_TCP_BIND_ADDRESS=127.0.0.1 VLLM_HOST_IP=127.0.0.1
T=$(mktemp -d /tmp/pdkv-test-benchmd.XXXXXX)
trap 'rm -rf "$T"' EXIT

usage() { # usage WANT_TEXT FLAGS...: exit 2 and the message names what is expected
	local want=$1
	shift
	"$B" "$@" >"$T/out" 2>&1
	[ $? = 2 ] && grep -q -- "$want" "$T/out"
}
check "--fault-device-down without @: exit 2, wants NAME@SECONDS" usage "want NAME@SECONDS" \
	--protocol=rdma --device_name=a,b --fault-device-down=a
check "--fault-device-down=a@0: exit 2" usage "want NAME@SECONDS" \
	--protocol=rdma --device_name=a,b --fault-device-down=a@0
check "--fault-device-down=a@x: exit 2" usage "want NAME@SECONDS" \
	--protocol=rdma --device_name=a,b --fault-device-down=a@x
check "--fault-device-down with tcp: exit 2, needs rdma" usage "protocol=rdma" \
	--protocol=tcp --fault-device-down=a@1
check "--fault-device-down on a device not listed: exit 2" usage "must be one of at least two" \
	--protocol=rdma --device_name=a,b --fault-device-down=c@1
check "--fault-device-down with one device: exit 2 (nowhere to move)" usage "must be one of at least two" \
	--protocol=rdma --device_name=a --fault-device-down=a@1
check "--fault-device-down on the target: exit 2" usage "initiator or loopback" \
	--mode=target --protocol=rdma --device_name=a,b --fault-device-down=a@1

run() { timeout 60 "$B" --operation=write -b 4K -e 64K -f 4 --batch_size=32 --max_inflight=16K \
	--duration=0.3 --check --json="$T/mi.json" >"$T/out" 2>&1; }
check "--max_inflight over tcp loopback exits 0" run
check "batch per size = min(32, 16K / block): 4 KiB 4, 16 KiB 1, 64 KiB 1; nothing wrong" python3 - "$T/mi.json" <<'PY'
import json, sys
rows = {r["block_size"]: r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "pdkv"}
assert {k: r["batch_size"] for k, r in rows.items()} == {4096: 4, 16384: 1, 65536: 1}, rows
assert all(r["wrong"] == 0 and r["failed"] == 0 and r["transfers"] > 0 for r in rows.values())
PY
check "no --max_inflight: --batch_size at every size" bash -c "timeout 60 '$B' -b 4K -e 16K -f 4 \
	--batch_size=8 --duration=0.2 --json='$T/b.json' >/dev/null 2>&1 && python3 -c 'import json,sys; \
assert {r[\"batch_size\"] for r in json.load(open(sys.argv[1]))[\"rows\"]} == {8}' '$T/b.json'"
[ "$fails" = 0 ]
