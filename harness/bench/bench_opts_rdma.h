/* SPDX-License-Identifier: Apache-2.0 */
/* bench_opts_rdma: pdkv bench's RDMA measurement flags (perftest comparison, --latency,
 * multi-device fault, per-size batch) as option-table entries, expanded inside bench_opts.c's
 * table (they write its g_o). */
#ifndef PDKV_BENCH_OPTS_RDMA_H
#define PDKV_BENCH_OPTS_RDMA_H

/* clang-format off */
#define BENCH_RDMA_OPTS \
	{.name = "perftest_host", \
	.type = PD_OPT_STR, \
	.dst = &g_o.perftest_host, \
	.arg = "=IP", \
	.help = "initiator: ib_write_bw server address (default: the\ntarget segment's host)"}, \
	{.name = "perftest_duration", \
	.type = PD_OPT_DOUBLE, \
	.dst = &g_o.perftest_duration, \
	.arg = "=S", \
	.help = "ib_write_bw -D, same on both sides (3)", \
	.want = "whole seconds 1..3600", \
	.min = 1, \
	.max = 3600}, \
	{.name = "perftest_port", \
	.type = PD_OPT_INT, \
	.dst = &g_o.perftest_port, \
	.arg = "=P", \
	.help = "device i uses port P+i (18515)", \
	.want = "a port 1024..65000", \
	.min = 1024, \
	.max = 65000}, \
	{.name = "latency", \
	.type = PD_OPT_FLAG, \
	.dst = &g_o.latency, \
	.help = "one request in flight: p50/p99/max in us over --iterations\nper size (8 B..64 KiB " \
	"unless -b/-e); rdma --compare-perftest:\nib_write_lat/ib_read_lat beside it"}, \
	{.name = "max_inflight", \
	.type = PD_OPT_SIZE, \
	.dst = &g_o.max_inflight, \
	.arg = "=BYTES", \
	.help = "per size, batch = min(--batch_size, BYTES / block): a\n4 KiB..16 MiB sweep in one " \
	"run (0 = off)", \
	.want = "a size like 32M"}, \
	{.name = "perftest_bytes", \
	.type = PD_OPT_SIZE, \
	.dst = &g_o.perftest_bytes, \
	.arg = "=BYTES", \
	.help = "ib_write_bw -n BYTES/size (at least 5) instead of -D:\nslow links, both sides", \
	.want = "a size like 32M"}, \
	{.name = "fault-device-down", \
	.type = PD_OPT_STR, \
	.dst = &g_o.fault_down, \
	.arg = "=DEV@S", \
	.help = "rdma, 2+ devices: ip link set <netdev of DEV> down S s\ninto the run (up after " \
	"it); rows report the slices moved"}, \
	{.name = "iterations", \
	.type = PD_OPT_U64, \
	.dst = &g_o.iterations, \
	.arg = "=N", \
	.help = "--latency: timed requests per size, also ib_*_lat -n (1000)", \
	.want = "1..10000000", \
	.min = 1, \
	.max = 10000000} \
/* clang-format on */

#endif
