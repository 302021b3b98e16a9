# SPDX-License-Identifier: Apache-2.0
# tier-multidev.sh — the rxe tier's multi-device steps (issue 31), sourced by tier-guest.sh
# after its single-pair steps (uses its now/result/judged/ratios_of, $W, $LOG, $refs). Two
# rails: rxe0 <-> rxe1 (10.77.0.x) and rxe2 <-> rxe3 (10.77.1.x), see rxe-pair-setup.sh.
#  multidev_aggregate: pdkv bench --device_name=rxe0,rxe2 -> rxe1,rxe3, WRITE 128 x 64 KiB
#    requests (one slice each, round robin over both devices), with the share per device, beside
#    one ib_write_bw per device pair (-s 64K -n 256) run at the same time and summed
#    (--compare-perftest); goal: aggregate >= 95 % of the sum. One QP per endpoint on both sides
#    (MC_NUM_QP_PER_EP=1: pdkv and ib_write_bw -q 1). Both rails are emulated by the same 2 guest
#    vCPUs, so two busy-polling ib_write_bw clients at once starve Soft-RoCE's kernel threads and
#    their sum is no ceiling here: pdkv above 150 % of it is NOTRUN with that reason (--above=notrun),
#    never a PASS; below the goal is still a FAIL.
#  multidev_device_down: the same run with --fault-device-down=rxe2@S: rxe-veth2 goes down
#    mid-run; PASS only when slices moved off rxe2 and no transfer failed and no byte was wrong.
# Env: RXE_MD_S (seconds per row, default 3), RXE_FAULT_AT (seconds, default 1).
MD_S=${RXE_MD_S:-3}
FAULT_AT=${RXE_FAULT_AT:-1}

md_bench() { # md_bench NAME [extra flags]: loopback over both rails, 1 MiB WRITEs, --check
	local name=$1
	shift
	MC_NUM_QP_PER_EP=1 MC_TCP_BIND_ADDRESS=10.77.0.1 timeout 200 $W/bin/pdkv-bench --mode=loopback --protocol=rdma \
		--device_name=rxe0,rxe2 --target_device_name=rxe1,rxe3 --operation=write \
		--block_size=64K --batch_size=128 --duration="$MD_S" --report_unit=MB --check \
		--json=$LOG/$name.json "$@" >$LOG/$name.log 2>&1
}

t0=$(now)
if [ -z "$have_bench" ]; then
	result NOTRUN multidev_aggregate "$t0" "pdkv-bench not built"
elif ! ibv_devinfo -d rxe3 2>/dev/null | grep -q PORT_ACTIVE; then
	result FAIL multidev_aggregate "$t0" "rxe2/rxe3 not ACTIVE: $(rdma link 2>&1 | tr '\n' ' ')"
else
	md_bench multidev --compare-perftest --perftest_bytes=16M ||
		{ echo "    (multidev_aggregate: retrying once; first try's tail:)"
		  tail -4 $LOG/multidev.log | sed 's/^/    | /'
		  md_bench multidev --compare-perftest --perftest_bytes=16M; }
	judged multidev_aggregate "$t0" "$(grep -m1 '^# devices:' $LOG/multidev.log | sed 's/^# //')" \
		--ratios="$(ratios_of $LOG/multidev.log)" --expect=1 --goal=95 --each \
		--labels="rxe0+rxe2" --ref="ib_write_bw x2 summed" --refs="$refs" --above=notrun \
		${bench_cv:+--noise=$bench_cv} "--noise-label=pdkv bench's spread over the ratio rounds, at least $SHOT_CV % for one shot"
	echo "    aggregate table (pdkv bench over rxe0,rxe2 vs ib_write_bw rxe0->rxe1 + rxe2->rxe3 at the same time):"
	[ -s $LOG/multidev.json ] && python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["kind"] != "pdkv":
        continue
    sh = ", ".join("%s %.1f%%" % (d["name"], d["share"] * 100) for d in r.get("devices", []))
    pt = r.get("ib_write_bw", 0)
    print("    %-10s %14s %22s %8s  %s" % ("bytes", "pdkv MB/s", "ib_write_bw summed MB/s", "ratio", "share"))
    print("    %-10d %14.1f %22.1f %7.1f%%  %s" % (r["block_size"], r["bandwidth"], pt,
          r["bandwidth"] / pt * 100 if pt else 0, sh))' $LOG/multidev.json
	grep -E '^# (ib_write_bw|ratio|devices|failover)' $LOG/multidev.log | sed 's/^/    /'
fi

t0=$(now)
if [ -z "$have_bench" ]; then
	result NOTRUN multidev_device_down "$t0" "pdkv-bench not built"
else
	md_bench multidev-down --fault-device-down="rxe2@$FAULT_AT"
	rc=$?
	v=$(python3 -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "pdkv"]
r = rows[0]
down = [d for d in r["devices"] if d["name"] == "rxe2"][0]
print(r["transfers"], r["failed"], r["wrong"], r["slices_moved"], r["slices_moved_completed"],
      down["slices_moved_out"], "%.1f" % (down["share"] * 100))' $LOG/multidev-down.json 2>/dev/null)
	read -r xf failed wrong moved movedc out2 share2 <<<"${v:-? ? ? ? ? ? ?}"
	detail="rc=$rc, $xf transfers, $failed failed, $wrong wrong bytes, $moved slices moved off rxe2 ($movedc completed on rxe0), rxe2 share $share2%"
	if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$wrong" = 0 ] && [ "${out2:-0}" != "?" ] && [ "${out2:-0}" -gt 0 ] &&
		grep -q '^# fault: ip link set dev rxe-veth2 down' $LOG/multidev-down.log; then
		result PASS multidev_device_down "$t0" "$detail"
	elif [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$wrong" = 0 ] && [ "${out2:-?}" = 0 ] &&
		grep -q 'rxe2 port 1 is down' $LOG/multidev-down.log; then
		# nothing lost and the port seen down, but no slice was in flight on rxe2 at that
		# moment (a loaded host, CI 2026-12-06): the re-post path was not exercised
		result NOTRUN multidev_device_down "$t0" "$detail: the fault hit no slice in flight on rxe2, so no move was tested"
		notruns="$notruns multidev_device_down"
	else
		result FAIL multidev_device_down "$t0" "$detail"
	fi
	grep -E '^# (fault|devices|failover)|^  pdkv|^pdkv-bench|rdma: ' $LOG/multidev-down.log | cut -c1-200 | sed 's/^/    /'
fi
