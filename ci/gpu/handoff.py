#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# handoff.py — the GPU tier's 1P1D hand-off figures from `pdkv run --json` (the prefill's
# pdkv_kv1_xfer_* histogram sums: vLLM has no Prometheus names for these, vllm #50374 is open)
# and the ratio to a `pdkv bench --json` WRITE row.
# Usage: handoff.py shape RUN.json          -> "DESCRIPTOR_BYTES DESCRIPTORS_PER_HANDOFF"
#        handoff.py ratio RUN.json BENCH.json [PREFILL.log [LABEL]] -> "# ratio 1P1D hand-off/..."
#        (with the prefill's log: also the hand-offs after the first, which opens the peer's
#        CUDA IPC handles / TCP connections)
#        handoff.py gap PREFILL.log -> median ms between the end of one hand-off and the start of
#        the next (the idle time pdkv bench --gap-ms gives its batches for a like-for-like
#        reference: an engine that waits between hand-offs submits slower than a hot loop)
import json
import re
import sys


def prefill_metrics(path):
    run = json.load(open(path))
    sc = run["scenarios"][0]
    if sc.get("status") != "PASS":
        sys.exit(f"{path}: scenario {sc.get('name')} is {sc.get('status')}")
    return sc["name"], sc["metrics"]["prefill"]


def shape(m):
    n = m["pdkv_kv1_xfer_bytes_count"]
    nd = m["pdkv_kv1_xfer_descriptors_sum"]
    if not n or not nd:
        sys.exit("no hand-offs in the prefill's metrics")
    return int(round(m["pdkv_kv1_xfer_bytes_sum"] / nd)), int(round(nd / n))


HANDOFF = re.compile(r"^(\d+):(\d+):([0-9.]+) .*KV hand-off from \S+: (\d+) bytes, \d+ "
                     r"descriptors in ([0-9.]+) ms")


def gap_ms(log):
    """Median idle ms between consecutive hand-offs (start of the next minus end of the last)."""
    ends = []
    for m in map(HANDOFF.search, open(log, errors="replace")):
        if m:
            t = (int(m.group(1)) * 60 + int(m.group(2))) * 60 + float(m.group(3))
            ends.append((t * 1e3, float(m.group(5))))
    gaps = sorted(b[0] - b[1] - a[0] for a, b in zip(ends, ends[1:]))
    gaps = [g for g in gaps if g >= 0]
    if not gaps:
        sys.exit(f"{log}: fewer than two hand-offs logged")
    return gaps[len(gaps) // 2]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "gap":
        print("%.1f" % gap_ms(sys.argv[2]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "shape":
        print("%d %d" % shape(prefill_metrics(sys.argv[2])[1]))
        return
    if len(sys.argv) not in (4, 5, 6) or sys.argv[1] != "ratio":
        sys.exit(__doc__ if __doc__ else "usage: handoff.py shape|ratio ...")
    name, m = prefill_metrics(sys.argv[2])
    blk, nd = shape(m)
    secs, nbytes = m["pdkv_kv1_xfer_seconds_sum"], m["pdkv_kv1_xfer_bytes_sum"]
    bench = json.load(open(sys.argv[3]))
    label = "pdkv bench write" + (", " + sys.argv[5] if len(sys.argv) == 6 else "")
    rows = [r for r in bench["rows"] if r["kind"] == "pdkv" and r["operation"] == "write"]
    if not rows or secs <= 0:
        sys.exit("no pdkv write row in the bench, or no hand-off time")
    ho, bw = nbytes / secs / 1e9, rows[0]["GBps"]
    print("# 1P1D %s: %d hand-offs, %.0f MB in %.4f s, %d descriptors of %d B each"
          % (name, m["pdkv_kv1_xfer_bytes_count"], nbytes / 1e6, secs, nd, blk))
    print("# ratio 1P1D hand-off/(%s) %s %d B x %d: %.2f / %.2f GB/s = %.2f"
          % (label, bench.get("protocol", "?"), blk, nd, ho, bw, ho / bw if bw else 0))
    if len(sys.argv) >= 5:
        pat = re.compile(r"KV hand-off from \S+: (\d+) bytes, \d+ descriptors in ([0-9.]+) ms")
        offs = [(int(m.group(1)), float(m.group(2)) / 1e3)
                for m in map(pat.search, open(sys.argv[4], errors="replace")) if m]
        if len(offs) > 1:
            b, t = sum(o[0] for o in offs[1:]), sum(o[1] for o in offs[1:])
            print("# 1P1D %s: first hand-off %.3f ms, the other %d: %.3f ms each (median %.3f ms)"
                  % (name, offs[0][1] * 1e3, len(offs) - 1, t / (len(offs) - 1) * 1e3,
                     sorted(o[1] for o in offs[1:])[(len(offs) - 1) // 2] * 1e3))
            print("# ratio 1P1D hand-off after the first/(%s) %s %d B x %d: "
                  "%.2f / %.2f GB/s = %.2f" % (label, bench.get("protocol", "?"), blk, nd,
                                               b / t / 1e9, bw, b / t / 1e9 / bw if bw else 0))


main()
