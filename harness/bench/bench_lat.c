/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lat: pdkv bench --latency — one request in flight, p50/p99/max per size, and beside it
 * ib_write_lat / ib_read_lat (perftest) on the same device pair with the ratio per size. */
#include "bench.h"
#include "pd_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_lat_check(struct bench_opts *o)
{
	const char *bad = o->baseline_id != BENCH_BASELINE_NONE ? "--baseline"
	                  : o->compare_mooncake                 ? "--compare-mooncake"
	                  : o->kv_geom[0]                       ? "--kv-geometry"
	                  : o->use_vram                         ? "--use_vram"
	                                                        : NULL;
	if (bad) {
		fprintf(stderr,
		        "pdkv-bench: --latency measures one request in flight against "
		        "ib_write_lat/ib_read_lat: not with %s (run that separately)\n",
		        bad);
		return 2;
	}
	o->batch = 1;
	o->threads = 1;
	/* perftest's latency range: 8 B .. 64 KiB, unless -b/-e say otherwise */
	if (!o->sweep_b)
		o->sweep_b = o->sweep_e && o->sweep_e < 8 ? o->sweep_e : 8;
	if (!o->sweep_e)
		o->sweep_e = o->sweep_b > 65536 ? o->sweep_b : 65536;
	return 0;
}

void bench_lat_header(const struct bench_opts *o)
{
	printf("# latency: one request in flight (batch 1, 1 thread), %llu timed requests per "
	       "size after one warm-up; percentiles by pd_stats (type 7), us\n",
	       (unsigned long long)o->iterations);
	if (o->protocol && !strcmp(o->protocol, "rdma")) {
		int64_t busy = 0;
		(void)pd_env_int("PDKV_RDMA_BUSY_POLL", &busy);
		printf(
		    "# latency: the engine's RDMA workers busy-poll (PDKV_RDMA_BUSY_POLL=%lld), as "
		    "ib_*_lat polls its CQ\n",
		    (long long)busy);
	}
	printf("# %-6s %-5s %10s %8s %10s %10s %10s %7s %7s\n", "kind", "op", "bytes", "iters",
	       "p50(us)", "p99(us)", "max(us)", "#wrong", "#failed");
	fflush(stdout);
}

void bench_lat_row(const struct bench_opts *o, const struct bench_row *r)
{
	(void)o;
	printf("  %-6s %-5s %10llu %8llu %10.1f %10.1f %10.1f %7llu %7llu\n", r->kind,
	       r->op ? "write" : "read", (unsigned long long)r->block,
	       (unsigned long long)r->transfers, r->lat_p50_us, r->lat_p99_us, r->lat_max_us,
	       (unsigned long long)r->wrong, (unsigned long long)r->failed);
	fflush(stdout);
}

/* The reference for one operation: ib_write_lat prints half a ping-pong round trip (its
 * figures are RTT/2), while a WRITE completes at the initiator only after the responder's ACK,
 * a full round trip: its figures x 2 are the like-for-like reference. ib_read_lat prints the
 * READ's own round trip (x 1). */
static const char *lat_bin(int op, int *factor)
{
	*factor = op == BENCH_WRITE ? 2 : 1;
	return op == BENCH_WRITE ? "ib_write_lat" : "ib_read_lat";
}

static void lat_table(const struct bench_opts *o, struct bench_row *rows, size_t nrows)
{
	printf("# latency table (us; ratio = pdkv p50 / reference p50, reference = ib_write_lat "
	       "x 2 (RTT) | ib_read_lat x 1)\n");
	printf("# %-5s %10s %10s %10s %10s %12s %10s %10s %7s\n", "op", "bytes", "pdkv_p50",
	       "pdkv_p99", "pdkv_max", "perftest", "ref_p50", "ref_p99", "ratio");
	for (size_t j = 0; j < nrows; j++) {
		struct bench_row *x = &rows[j];
		double f = x->pt_rtt_factor;
		if (strcmp(x->kind, "pdkv") || !(x->pt_lat_us > 0))
			continue;
		printf("  %-5s %10llu %10.1f %10.1f %10.1f %12s %10.1f %10.1f %7.2f\n",
		       x->op ? "write" : "read", (unsigned long long)x->block, x->lat_p50_us,
		       x->lat_p99_us, x->lat_max_us, x->op ? "ib_write_lat" : "ib_read_lat",
		       x->pt_lat_us * f, x->pt_lat_p99_us * f, x->lat_p50_us / (x->pt_lat_us * f));
	}
	(void)o;
}

int bench_lat_compare(const struct bench_opts *o, struct bench_row *rows, size_t nrows,
                      const uint64_t *sizes, size_t ns, bool loopback)
{
	struct bench_pt_res res[64];
	char host[256];
	int ret = 0;

	if (ns > 64)
		ns = 64;
	if (bench_perftest_host(o, host, sizeof(host)))
		return -1;
	for (int k = 0; k < o->lat_nops && k < 2; k++) {
		int op = o->lat_ops[k], f;
		const char *bin = lat_bin(op, &f);
		printf("# perftest: %s -d %s -> %s (%s), -n %llu per size\n", bin, o->device, host,
		       loopback ? "server started here" : "the target's server",
		       (unsigned long long)o->iterations);
		fflush(stdout);
		if (bench_perftest_run_tool(
		        o, bin, loopback ? (o->target_device ? o->target_device : o->device) : NULL,
		        host, sizes, ns, res))
			ret = -1;
		for (size_t i = 0; i < ns; i++) {
			if (!(res[i].lat > 0))
				continue;
			printf("# %s %llu B: t_typical %.2f us, 99%% %.2f us, t_max %.2f us\n", bin,
			       (unsigned long long)sizes[i], res[i].lat, res[i].p99, res[i].max);
			for (size_t j = 0; j < nrows; j++) {
				struct bench_row *x = &rows[j];
				if (x->block != sizes[i] || x->op != op || strcmp(x->kind, "pdkv"))
					continue;
				x->pt_lat_us = res[i].lat;
				x->pt_lat_p99_us = res[i].p99;
				x->pt_lat_max_us = res[i].max;
				x->pt_rtt_factor = f;
				printf("# ratio pdkv/%s %s %llu B: p50 %.1f / %.1f us = %.2f "
				       "(%.0f%% of "
				       "%s%s)\n",
				       bin, op ? "write" : "read", (unsigned long long)sizes[i],
				       x->lat_p50_us, res[i].lat * f,
				       x->lat_p50_us / (res[i].lat * f),
				       x->lat_p50_us / (res[i].lat * f) * 100, bin,
				       f == 2 ? " x 2: its figure is half a round trip" : "");
				break;
			}
		}
	}
	lat_table(o, rows, nrows);
	fflush(stdout);
	if (ret)
		fprintf(stderr, "pdkv-bench: --compare-perftest: ib_*_lat did not complete for "
		                "every size (see above)\n");
	return ret;
}
