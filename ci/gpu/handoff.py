#!/usr/bin/env python3
# handoff.py — the GPU tier's 1P1D hand-off figures from `pdkv run --json` (the prefill's
# vllm:mooncake_* histogram sums) and the ratio to a `pdkv bench --json` WRITE row.
# Usage: handoff.py shape RUN.json          -> "DESCRIPTOR_BYTES DESCRIPTORS_PER_HANDOFF"
#        handoff.py ratio RUN.json BENCH.json -> one "# ratio 1P1D hand-off/..." line
import json
import sys


def prefill_metrics(path):
    run = json.load(open(path))
    sc = run["scenarios"][0]
    if sc.get("status") != "PASS":
        sys.exit(f"{path}: scenario {sc.get('name')} is {sc.get('status')}")
    return sc["name"], sc["metrics"]["prefill"]


def shape(m):
    n = m["vllm:mooncake_bytes_transferred_count"]
    nd = m["vllm:mooncake_num_descriptors_sum"]
    if not n or not nd:
        sys.exit("no hand-offs in the prefill's metrics")
    return int(round(m["vllm:mooncake_bytes_transferred_sum"] / nd)), int(round(nd / n))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "shape":
        print("%d %d" % shape(prefill_metrics(sys.argv[2])[1]))
        return
    if len(sys.argv) != 4 or sys.argv[1] != "ratio":
        sys.exit(__doc__ if __doc__ else "usage: handoff.py shape|ratio ...")
    name, m = prefill_metrics(sys.argv[2])
    blk, nd = shape(m)
    secs, nbytes = m["vllm:mooncake_xfer_time_seconds_sum"], m["vllm:mooncake_bytes_transferred_sum"]
    bench = json.load(open(sys.argv[3]))
    rows = [r for r in bench["rows"] if r["kind"] == "pdkv" and r["operation"] == "write"]
    if not rows or secs <= 0:
        sys.exit("no pdkv write row in the bench, or no hand-off time")
    ho, bw = nbytes / secs / 1e9, rows[0]["GBps"]
    print("# 1P1D %s: %d hand-offs, %.0f MB in %.4f s, %d descriptors of %d B each"
          % (name, m["vllm:mooncake_bytes_transferred_count"], nbytes / 1e6, secs, nd, blk))
    print("# ratio 1P1D hand-off/(pdkv bench write) %s %d B x %d: %.2f / %.2f GB/s = %.2f"
          % (bench.get("protocol", "?"), blk, nd, ho, bw, ho / bw if bw else 0))


main()
