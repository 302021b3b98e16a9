/* SPDX-License-Identifier: Apache-2.0 */
/* bench_report: what pdkv-bench prints and writes — banner, perftest/nccl-tests-style rows,
 * JSON and CSV — plus the --check data pattern and latency percentiles. */
#include "bench.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "pd_stats.h"
#include "pd_util.h"

/* PDKV_GIT_COMMIT: `git describe` of the tree built (bench.mk generates pdkv_git.h) */
#if __has_include("pdkv_git.h")
#include "pdkv_git.h"
#endif
#ifndef PDKV_GIT_COMMIT
#define PDKV_GIT_COMMIT "unknown"
#endif
#define BENCH_PDKV_VERSION "0.1"

extern char **environ;

void bench_lat_add(struct bench_lat *l, double us)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 4096;
		double *p = realloc(l->v, nc * sizeof(*p));
		if (!p)
			return; /* a lost sample only blurs a percentile */
		l->v = p;
		l->cap = nc;
	}
	l->v[l->n++] = us;
}

void bench_lat_merge(struct bench_lat *dst, struct bench_lat *src)
{
	for (size_t i = 0; i < src->n; i++)
		bench_lat_add(dst, src->v[i]);
	free(src->v);
	memset(src, 0, sizeof(*src));
}

/* p50 / p99 by pd_stats' one definition (linear interpolation between closest ranks) */
void bench_lat_pct(struct bench_lat *l, double *p50, double *p99)
{
	*p50 = *p99 = 0;
	if (!l->n)
		return;
	pd_stats_sort(l->v, l->n);
	*p50 = pd_stats_pct_sorted(l->v, l->n, 50);
	*p99 = pd_stats_pct_sorted(l->v, l->n, 99);
}

/* ---------------------------------------------------------------- pattern */
static inline uint64_t word(uint64_t i, uint64_t seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xD1B54A32D192ED03ull;
	return x ^ (x >> 31);
}

void bench_fill(char *dst, uint64_t off, size_t len, uint64_t seed)
{
	while (len && (off & 7)) {
		uint64_t w = word(off >> 3, seed);
		*dst++ = (char)(w >> (8 * (off & 7)));
		off++;
		len--;
	}
	for (; len >= 8; len -= 8, off += 8, dst += 8) {
		uint64_t w = word(off >> 3, seed);
		memcpy(dst, &w, 8);
	}
	for (; len; len--, off++) {
		uint64_t w = word(off >> 3, seed);
		*dst++ = (char)(w >> (8 * (off & 7)));
	}
}

uint64_t bench_count_wrong(const char *buf, uint64_t off, size_t len, uint64_t seed)
{
	uint64_t wrong = 0;
	while (len && (off & 7)) {
		uint64_t w = word(off >> 3, seed);
		wrong += *buf++ != (char)(w >> (8 * (off & 7)));
		off++;
		len--;
	}
	for (; len >= 8; len -= 8, off += 8, buf += 8) {
		uint64_t w = word(off >> 3, seed), got;
		memcpy(&got, buf, 8);
		if (got != w)
			for (int k = 0; k < 8; k++)
				wrong += (uint8_t)(got >> (8 * k)) != (uint8_t)(w >> (8 * k));
	}
	for (; len; len--, off++) {
		uint64_t w = word(off >> 3, seed);
		wrong += *buf++ != (char)(w >> (8 * (off & 7)));
	}
	return wrong;
}

/* ---------------------------------------------------------------- text */
void bench_row_init(struct bench_row *row, const char *kind, const struct bench_opts *o,
                    uint64_t block)
{
	memset(row, 0, sizeof(*row));
	row->kind = kind;
	row->op = o->op;
	row->block = block;
	row->batch = o->batch;
	row->threads = o->threads;
}

double bench_bw(const struct bench_opts *o, uint64_t bytes, double secs)
{
	double v = secs > 0 ? (double)bytes / secs : 0;
	if (o->unit_bits)
		v *= 8;
	return v / o->unit_div;
}

void bench_banner(const struct bench_opts *o, const char *local, const char *remote,
                  uint64_t remote_size)
{
	const char *line = "-------------------------------------------------------------------"
	                   "--------------------------";
	printf("%s\n", line);
	printf(" pdkv bench: %s, protocol %s, %s\n", o->ops_str, o->protocol ? o->protocol : "auto",
	       !strcmp(o->baseline, "socket-only") ? "plain socket only"
	       : !strcmp(o->baseline, "socket")    ? "with plain-socket baseline"
	                                           : "transfer engine");
	printf(" metadata       : %s\n", o->metadata);
	printf(" local segment  : %s\n", local ? local : "-");
	if (o->buffers > 1)
		printf(" target segment : %s (%d buffers, the first of %llu bytes)\n",
		       remote ? remote : "-", o->buffers, (unsigned long long)remote_size);
	else
		printf(" target segment : %s (buffer %llu bytes)\n", remote ? remote : "-",
		       (unsigned long long)remote_size);
	printf(" block size     : %llu", (unsigned long long)o->block);
	if (o->sweep_b)
		printf(" (sweep -b %llu -e %llu -f %g)", (unsigned long long)o->sweep_b,
		       (unsigned long long)o->sweep_e, o->sweep_f);
	if (o->latency)
		printf("\n batch size     : 1   threads: 1   latency: %llu requests per row\n",
		       (unsigned long long)o->iterations);
	else
		printf("\n batch size     : %llu   threads: %llu   duration: %g s per row\n",
		       (unsigned long long)o->batch, (unsigned long long)o->threads, o->duration);
	if (o->gap_ms > 0)
		printf(" gap            : %g ms idle between batches (not timed)\n", o->gap_ms);
	if (o->buffers > 1)
		printf(
		    " buffers        : %d separate allocations per side (transfer k of a batch in "
		    "allocation k mod %d)\n",
		    o->buffers, o->buffers);
	if (bench_affinity_desc())
		printf(" affinity       : %s\n", bench_affinity_desc());
	if (bench_cc_desc()[0] && strcmp(o->protocol ? o->protocol : "tcp", "tcp") == 0)
		printf(" congestion     : %s\n", bench_cc_desc());
	if (o->buffers > 1) /* each allocation holds its share of the largest row and a block */
		printf(
		    " buffer size    : %d x %llu bytes per side (--buffers)\n", o->buffers,
		    (unsigned long long)bench_buffer_each(o, o->max_block * o->batch * o->threads));
	else
		printf(" buffer size    : %llu bytes per side (at least block x batch x threads)\n",
		       (unsigned long long)o->buffer_size);
	printf(" check          : %s\n",
	       o->check ? "on: every byte compared (write: per-iteration pattern read back; read: "
	                  "target pattern); not timed"
	                : "off");
	if (o->protocol && !strcmp(o->protocol, "rdma"))
		printf(" line rate      : %s%.2f GB/s = %.1f Gb/s (%s; rows add %% of it)\n",
		       o->line_rate_gbps > 0 ? "" : "unknown: ", o->line_rate_gbps / 8,
		       o->line_rate_gbps, o->line_rate_desc ? o->line_rate_desc : "-");
	printf("%s\n", line);
	fflush(stdout);
}

void bench_table_header(const struct bench_opts *o)
{
	char bw[24];
	snprintf(bw, sizeof(bw), "%s/s", o->unit);
	printf("# %-6s %-5s %12s %6s %4s %10s %12s %12s %12s %10s %8s\n", "kind", "op", "bytes",
	       "batch", "thr", bw, "transfers/s", "lat_p50(us)", "lat_p99(us)", "#wrong",
	       "#failed");
	if (o->line_rate_gbps > 0)
		printf("# (rdma: the last column is %% of the %.2f GB/s line rate)\n",
		       o->line_rate_gbps / 8);
	fflush(stdout);
}

void bench_table_row(const struct bench_opts *o, struct bench_row *r)
{
	printf("  %-6s %-5s %12llu %6llu %4llu %10.*f %12.0f %12.1f %12.1f %10llu %8llu", r->kind,
	       r->op ? "write" : "read", (unsigned long long)r->block, (unsigned long long)r->batch,
	       (unsigned long long)r->threads, o->precision, r->bw,
	       r->seconds > 0 ? (double)r->transfers / r->seconds : 0, r->lat_p50_us, r->lat_p99_us,
	       (unsigned long long)r->wrong, (unsigned long long)r->failed);
	if (o->line_rate_gbps > 0 && r->pct_line_rate >= 0)
		printf(" %7.1f%%", r->pct_line_rate);
	printf("\n");
	/* transfer_engine_bench's closing line, one per row */
	printf("Test completed: duration %.2f, batch count %llu, throughput %.*f %s/s\n",
	       r->seconds, (unsigned long long)r->batches, o->precision, r->bw, o->unit);
	fflush(stdout);
}

/* --scheme: what pairs with what, and the engines behind them */
void bench_scheme_banner(const struct bench_opts *o, int ni, int nt, uint64_t lregion,
                         uint64_t rregion)
{
	printf(" scheme         : %s, ", o->scheme);
	if (o->scheme_id == BENCH_SCHEME_TP && o->tp_prefill)
		printf("prefill TP %d, decode TP %d: %d pairs, each 1/%d of the KV heads (read: "
		       "decode ranks pull from prefill ranks; write: prefill ranks push)\n",
		       o->tp_prefill, o->tp_decode, o->pairs[0], o->pairs[0]);
	else if (o->scheme_id == BENCH_SCHEME_TP)
		printf("%d initiator ranks, %d target ranks: %d pairs, each 1/%d of the KV heads\n",
		       o->num_init_dev, o->num_target_dev, o->pairs[0], o->pairs[0]);
	else {
		printf("pairs");
		for (int k = 0; k < o->npoints; k++)
			printf("%s%d", k ? "," : " ", o->pairs[k]);
		printf(" (%s)\n",
		       o->scheme_id == BENCH_SCHEME_MANYTOONE   ? "N initiators -> 1 target"
		       : o->scheme_id == BENCH_SCHEME_ONETOMANY ? "1 initiator -> N targets"
		                                                : "N initiator/target pairs");
	}
	printf(" engines        : up to %d initiator engine%s in this process (2 x %llu bytes "
	       "each), %d "
	       "target%s (%s, %llu bytes used at most); all pairs start at one barrier\n",
	       ni, ni > 1 ? "s" : "", (unsigned long long)lregion, nt, nt > 1 ? "s" : "",
	       o->mode_id == BENCH_LOOPBACK ? "spawned" : "--segment_id",
	       (unsigned long long)rregion);
	if (o->use_vram)
		printf(" memory         : GPU: initiator engine i on cuda:(%d + i) %% %d, %s\n",
		       o->gpu_id, o->scheme_ngpu,
		       o->mode_id == BENCH_LOOPBACK
		           ? "spawned target t on cuda:(target GPU + t) % N"
		           : "targets as they were started");
	printf(" rows           : the aggregate (bytes of all pairs / the slowest pair's time; "
	       "latency: the worst pair's), then one row per pair\n");
	fflush(stdout);
}

/* "i0->t1"; tp with prefill/decode ranks: "D0<-P1" (decode 0 pulls from prefill 1, read) or
 * "P1->D0" (write) */
static void pair_label(const struct bench_opts *o, const struct bench_pair_row *p, char *buf,
                       size_t len)
{
	if (o->scheme_id == BENCH_SCHEME_TP && o->tp_prefill)
		snprintf(buf, len, o->op == BENCH_READ ? "D%d<-P%d" : "P%d->D%d", p->initiator,
		         p->target);
	else
		snprintf(buf, len, "i%d->t%d", p->initiator, p->target);
}

void bench_scheme_pairs_print(const struct bench_opts *o, struct bench_row *agg)
{
	const struct bench_scheme_row *sr = agg->scheme;
	bool sock = !strcmp(agg->kind, "socket");
	bench_table_row(o, agg);
	if (agg->bytes)
		printf("# cpu: initiators %.2f s, targets %.2f s = %.2f s per GB moved\n",
		       agg->cpu_init_s, agg->cpu_target_s,
		       (agg->cpu_init_s + agg->cpu_target_s) / ((double)agg->bytes / 1e9));
	for (int k = 0; k < sr->npairs; k++) {
		const struct bench_row *r = &sr->pairs[k].row;
		char kind[16], label[32];
		snprintf(kind, sizeof(kind), sock ? "spair%d" : "pair%d", k);
		pair_label(o, &sr->pairs[k], label, sizeof(label));
		printf(
		    "  %-6s %-5s %12llu %6llu %4llu %10.*f %12.0f %12.1f %12.1f %10llu %8llu  %s\n",
		    kind, r->op ? "write" : "read", (unsigned long long)r->block,
		    (unsigned long long)r->batch, (unsigned long long)r->threads, o->precision,
		    r->bw, r->seconds > 0 ? (double)r->transfers / r->seconds : 0, r->lat_p50_us,
		    r->lat_p99_us, (unsigned long long)r->wrong, (unsigned long long)r->failed,
		    label);
	}
	printf("# fairness %s%s %s %llu B: %d pair%s (%d initiator%s, %d target%s): per pair min "
	       "%.*f max %.*f %s/s, min/max %.3f, Jain's index %.3f\n",
	       sock ? "socket " : "", sr->scheme, agg->op ? "write" : "read",
	       (unsigned long long)agg->block, sr->npairs, sr->npairs > 1 ? "s" : "",
	       sr->initiators, sr->initiators > 1 ? "s" : "", sr->targets,
	       sr->targets > 1 ? "s" : "", o->precision, sr->bw_min, o->precision, sr->bw_max,
	       o->unit, sr->min_max, sr->jain);
	fflush(stdout);
}

void bench_scheme_ratio_print(const struct bench_opts *o, uint64_t size,
                              const struct bench_row *best)
{
	const struct bench_scheme_row *sr = best->scheme;
	printf("# ratio pdkv/socket %s %s %llu B, %d pair%s: %.*f / %.*f %s/s = %.2f%s\n",
	       sr->scheme, best->op ? "write" : "read", (unsigned long long)size, sr->npairs,
	       sr->npairs > 1 ? "s" : "", o->precision, best->bw, o->precision, sr->socket_bw,
	       o->unit, best->bw / sr->socket_bw, o->repeat > 1 ? " (best of each)" : "");
	printf("# ratio pdkv/socket per pair (%s):",
	       o->repeat > 1 ? "pdkv / socket, best row of each" : "pdkv / socket");
	for (int k = 0; k < sr->npairs; k++) {
		char label[32];
		const struct bench_pair_row *p = &sr->pairs[k];
		pair_label(o, p, label, sizeof(label));
		printf("%s %s %.2f", k ? "," : "", label,
		       p->socket_bw > 0 ? p->row.bw / p->socket_bw : 0);
	}
	printf("\n");
	fflush(stdout);
}

/* What `pdkv report` needs to say whether two runs are comparable: build, host, settings, and
 * the engine's MC_* environment (MC_TCP_LANES_PER_PEER and friends change the numbers). */
static void json_meta(cJSON *root, const struct bench_opts *o)
{
	cJSON *m = cJSON_AddObjectToObject(root, "meta"), *env;
	struct utsname u;
	char ts[32], host[256] = "";
	time_t now = time(NULL);

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	cJSON_AddStringToObject(m, "version", BENCH_PDKV_VERSION);
	cJSON_AddStringToObject(m, "commit", PDKV_GIT_COMMIT);
	cJSON_AddStringToObject(m, "finished", ts);
	gethostname(host, sizeof(host) - 1);
	cJSON_AddStringToObject(m, "hostname", host);
	if (uname(&u) == 0) {
		cJSON_AddStringToObject(m, "kernel", u.release);
		cJSON_AddStringToObject(m, "machine", u.machine);
	}
	cJSON_AddNumberToObject(m, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddStringToObject(m, "mode", o->mode);
	cJSON_AddStringToObject(m, "protocol", o->protocol ? o->protocol : "auto");
	cJSON_AddStringToObject(m, "devices", o->device ? o->device : "");
	if (o->line_rate_gbps > 0)
		cJSON_AddNumberToObject(m, "line_rate_gbps", o->line_rate_gbps);
	cJSON_AddStringToObject(m, "memory", bench_mem_location(o));
	cJSON_AddStringToObject(m, "operation", o->ops_str);
	cJSON_AddNumberToObject(m, "block_size", (double)(o->sweep_b ? o->sweep_b : o->block));
	if (o->sweep_b) {
		cJSON_AddNumberToObject(m, "block_size_max", (double)o->sweep_e);
		cJSON_AddNumberToObject(m, "block_size_factor", o->sweep_f);
	}
	cJSON_AddNumberToObject(m, "batch_size", (double)o->batch);
	cJSON_AddNumberToObject(m, "threads", (double)o->threads);
	cJSON_AddNumberToObject(m, "duration_s", o->duration);
	cJSON_AddNumberToObject(m, "gap_ms", o->gap_ms);
	cJSON_AddNumberToObject(m, "buffers", o->buffers > 1 ? o->buffers : 1);
	cJSON_AddStringToObject(m, "affinity",
	                        bench_affinity_desc() ? bench_affinity_desc() : "none");
	if (bench_cc_name()[0]) {
		cJSON_AddStringToObject(m, "congestion_control", bench_cc_name());
		cJSON_AddStringToObject(m, "congestion_control_host", bench_cc_host());
	}
	cJSON_AddNumberToObject(m, "repeat", o->repeat);
	cJSON_AddStringToObject(m, "baseline", o->baseline);
	cJSON_AddBoolToObject(m, "check", o->check);
	if (o->scheme_on)
		cJSON_AddStringToObject(m, "scheme", o->scheme);
	/* loopback: the target is this binary; a separate target's version is not exchanged */
	if (!strcmp(o->mode, "loopback"))
		cJSON_AddStringToObject(m, "peer_version", BENCH_PDKV_VERSION " " PDKV_GIT_COMMIT);
	env = cJSON_AddObjectToObject(m, "env");
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char k[128];
		if (!eq || strncmp(*e, "MC_", 3) || (size_t)(eq - *e) >= sizeof(k))
			continue;
		memcpy(k, *e, (size_t)(eq - *e));
		k[eq - *e] = '\0';
		cJSON_AddStringToObject(env, k, eq + 1);
	}
}

static bool same_series(const struct bench_row *a, const struct bench_row *b)
{
	return !strcmp(a->kind, b->kind) && a->op == b->op && a->block == b->block &&
	       a->batch == b->batch && a->threads == b->threads &&
	       (a->scheme ? a->scheme->npairs : 0) == (b->scheme ? b->scheme->npairs : 0);
}

/* rows of one (operation, block size, pairs) point: what a pdkv/socket ratio compares */
static bool same_point(const struct bench_row *a, const struct bench_row *b)
{
	return a->op == b->op && a->block == b->block &&
	       (a->scheme ? a->scheme->npairs : 0) == (b->scheme ? b->scheme->npairs : 0);
}

/* Every repetition of row i's series (--repeat), in run order: what `pdkv report compare`
 * tests; each repetition's row carries them all, and its own index in "repetition". */
static void json_samples(cJSON *x, const struct bench_opts *o, struct bench_row *rows, size_t n,
                         size_t i)
{
	cJSON *s = cJSON_AddObjectToObject(x, "samples");
	cJSON *gb = cJSON_AddArrayToObject(s, "GBps"), *bw = cJSON_AddArrayToObject(s, "bandwidth");
	cJSON *p50 = cJSON_AddArrayToObject(s, "lat_p50_us");
	cJSON *p99 = cJSON_AddArrayToObject(s, "lat_p99_us");
	cJSON *cpu = cJSON_AddArrayToObject(s, "cpu_s_per_GB");
	cJSON *lr = o->line_rate_gbps > 0 ? cJSON_AddArrayToObject(s, "pct_line_rate") : NULL;
	int rep = 0;
	for (size_t j = 0; j < n; j++) {
		struct bench_row *r = &rows[j];
		if (!same_series(r, &rows[i]))
			continue;
		rep += j <= i;
		cJSON_AddItemToArray(
		    gb,
		    cJSON_CreateNumber(r->seconds > 0 ? (double)r->bytes / r->seconds / 1e9 : 0));
		cJSON_AddItemToArray(bw, cJSON_CreateNumber(r->bw));
		cJSON_AddItemToArray(p50, cJSON_CreateNumber(r->lat_p50_us));
		cJSON_AddItemToArray(p99, cJSON_CreateNumber(r->lat_p99_us));
		cJSON_AddItemToArray(
		    cpu, cJSON_CreateNumber(r->bytes ? (r->cpu_init_s + r->cpu_target_s) /
		                                           ((double)r->bytes / 1e9)
		                                     : 0));
		if (lr)
			cJSON_AddItemToArray(lr, cJSON_CreateNumber(r->pct_line_rate));
	}
	cJSON_AddNumberToObject(x, "repetition", rep);
}

/* A row's counts in its JSON object: batches, transfers, bytes, bandwidth (report units), GBps */
static void json_counts(cJSON *x, const struct bench_row *r)
{
	cJSON_AddNumberToObject(x, "batches", (double)r->batches);
	cJSON_AddNumberToObject(x, "transfers", (double)r->transfers);
	cJSON_AddNumberToObject(x, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(x, "bandwidth", r->bw);
	cJSON_AddNumberToObject(x, "GBps",
	                        r->seconds > 0 ? (double)r->bytes / r->seconds / 1e9 : 0);
}

/* --scheme: the pairs behind an aggregate row, their fairness and the sweep's scaling */
static void json_scheme(cJSON *x, const struct bench_opts *o, const struct bench_scheme_row *sr,
                        double agg_bw)
{
	cJSON *arr;
	cJSON_AddStringToObject(x, "scheme", sr->scheme);
	cJSON_AddNumberToObject(x, "pairs", sr->npairs);
	cJSON_AddNumberToObject(x, "initiators", sr->initiators);
	cJSON_AddNumberToObject(x, "targets", sr->targets);
	if (sr->tp_prefill) {
		cJSON_AddNumberToObject(x, "tp_prefill", sr->tp_prefill);
		cJSON_AddNumberToObject(x, "tp_decode", sr->tp_decode);
	}
	cJSON_AddNumberToObject(x, "pair_bandwidth_min", sr->bw_min);
	cJSON_AddNumberToObject(x, "pair_bandwidth_max", sr->bw_max);
	cJSON_AddNumberToObject(x, "fairness_min_max", sr->min_max);
	cJSON_AddNumberToObject(x, "fairness_jain", sr->jain);
	cJSON_AddNumberToObject(x, "scaling", sr->scaling);
	cJSON_AddNumberToObject(x, "scaling_base_pairs", sr->scaling_base);
	if (sr->socket_bw > 0) {
		cJSON_AddNumberToObject(x, "socket_bandwidth", sr->socket_bw);
		cJSON_AddNumberToObject(x, "ratio_vs_socket", agg_bw / sr->socket_bw);
	}
	arr = cJSON_AddArrayToObject(x, "per_pair");
	for (int k = 0; k < sr->npairs; k++) {
		const struct bench_row *r = &sr->pairs[k].row;
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "pair", k);
		cJSON_AddNumberToObject(p, "initiator", sr->pairs[k].initiator);
		cJSON_AddNumberToObject(p, "target", sr->pairs[k].target);
		if (o->use_vram) {
			char loc[32];
			snprintf(loc, sizeof(loc), "cuda:%d",
			         bench_scheme_gpu(o, false, sr->pairs[k].initiator));
			cJSON_AddStringToObject(p, "memory", loc);
			snprintf(loc, sizeof(loc), "cuda:%d",
			         bench_scheme_gpu(o, true, sr->pairs[k].target));
			if (o->mode_id == BENCH_LOOPBACK)
				cJSON_AddStringToObject(p, "target_memory", loc);
		}
		cJSON_AddNumberToObject(p, "block_size", (double)r->block);
		cJSON_AddNumberToObject(p, "batch_size", (double)r->batch);
		cJSON_AddNumberToObject(p, "duration_s", r->seconds);
		json_counts(p, r);
		cJSON_AddNumberToObject(p, "lat_p50_us", r->lat_p50_us);
		cJSON_AddNumberToObject(p, "lat_p99_us", r->lat_p99_us);
		cJSON_AddNumberToObject(p, "wrong", (double)r->wrong);
		cJSON_AddNumberToObject(p, "failed", (double)r->failed);
		if (sr->pairs[k].socket_bw > 0) {
			cJSON_AddNumberToObject(p, "socket_bandwidth", sr->pairs[k].socket_bw);
			cJSON_AddNumberToObject(p, "ratio_vs_socket",
			                        r->bw / sr->pairs[k].socket_bw);
		}
		cJSON_AddItemToArray(arr, p);
	}
}

/* a row's per-device share and failover counts (multi-device rdma rows) */
static void json_devices(cJSON *x, const struct bench_row *r)
{
	cJSON *arr = cJSON_AddArrayToObject(x, "devices");
	uint64_t total = 0, moved = 0, in = 0;

	for (int i = 0; i < r->ndevs; i++)
		total += r->devs[i].bytes;
	for (int i = 0; i < r->ndevs; i++) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", r->devs[i].name);
		cJSON_AddNumberToObject(d, "bytes", (double)r->devs[i].bytes);
		cJSON_AddNumberToObject(d, "share",
		                        total ? (double)r->devs[i].bytes / (double)total : 0);
		cJSON_AddNumberToObject(d, "slices_moved_out", (double)r->devs[i].moved_out);
		cJSON_AddNumberToObject(d, "slices_moved_in", (double)r->devs[i].moved_in);
		cJSON_AddBoolToObject(d, "port_down", r->devs[i].down);
		cJSON_AddItemToArray(arr, d);
		moved += r->devs[i].moved_out;
		in += r->devs[i].moved_in;
	}
	cJSON_AddNumberToObject(x, "slices_moved", (double)moved);
	cJSON_AddNumberToObject(x, "slices_moved_completed", (double)in);
}

int bench_write_json(const struct bench_opts *o, const char *path, struct bench_row *rows, size_t n,
                     const char *local, const char *remote)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *txt;
	int ret;

	cJSON_AddStringToObject(root, "tool", "pdkv-bench");
	cJSON_AddStringToObject(root, "local_segment", local ? local : "");
	cJSON_AddStringToObject(root, "target_segment", remote ? remote : "");
	cJSON_AddStringToObject(root, "protocol", o->protocol ? o->protocol : "auto");
	cJSON_AddStringToObject(root, "metadata", o->metadata);
	cJSON_AddStringToObject(root, "report_unit", o->unit);
	cJSON_AddBoolToObject(root, "check", o->check);
	cJSON_AddNumberToObject(root, "batch_size", (double)o->batch);
	cJSON_AddNumberToObject(root, "threads", (double)o->threads);
	if (o->scheme_on)
		cJSON_AddStringToObject(root, "scheme", o->scheme);
	if (o->line_rate_gbps > 0) {
		cJSON_AddNumberToObject(root, "line_rate_gbps", o->line_rate_gbps);
		cJSON_AddNumberToObject(root, "line_rate_GBps", o->line_rate_gbps / 8);
	}
	arr = cJSON_AddArrayToObject(root, "rows");
	for (size_t i = 0; i < n; i++) {
		struct bench_row *r = &rows[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "kind", r->kind);
		cJSON_AddStringToObject(x, "operation", r->op ? "write" : "read");
		cJSON_AddNumberToObject(x, "block_size", (double)r->block);
		cJSON_AddNumberToObject(x, "batch_size", (double)r->batch);
		cJSON_AddNumberToObject(x, "threads", (double)r->threads);
		cJSON_AddNumberToObject(x, "duration_s", r->seconds);
		cJSON_AddNumberToObject(x, "wall_s", r->wall);
		json_counts(x, r);
		cJSON_AddNumberToObject(x, "transfers_per_s",
		                        r->seconds > 0 ? (double)r->transfers / r->seconds : 0);
		cJSON_AddNumberToObject(x, "lat_p50_us", r->lat_p50_us);
		cJSON_AddNumberToObject(x, "lat_p99_us", r->lat_p99_us);
		if (o->latency) {
			cJSON_AddNumberToObject(x, "lat_max_us", r->lat_max_us);
			cJSON_AddNumberToObject(x, "iterations", (double)r->transfers);
		}
		if (r->pt_lat_us > 0) {
			double ref = r->pt_lat_us * r->pt_rtt_factor;
			cJSON_AddStringToObject(x, "perftest",
			                        r->op ? "ib_write_lat" : "ib_read_lat");
			cJSON_AddNumberToObject(x, "perftest_lat_us", r->pt_lat_us);
			cJSON_AddNumberToObject(x, "perftest_lat_p99_us", r->pt_lat_p99_us);
			cJSON_AddNumberToObject(x, "perftest_lat_max_us", r->pt_lat_max_us);
			cJSON_AddNumberToObject(x, "perftest_rtt_factor", r->pt_rtt_factor);
			cJSON_AddNumberToObject(x, "ratio_vs_perftest_lat", r->lat_p50_us / ref);
		}
		cJSON_AddNumberToObject(x, "wrong", (double)r->wrong);
		cJSON_AddNumberToObject(x, "failed", (double)r->failed);
		cJSON_AddNumberToObject(x, "cpu_initiator_s", r->cpu_init_s);
		cJSON_AddNumberToObject(x, "cpu_target_s", r->cpu_target_s);
		if (o->line_rate_gbps > 0 && r->pct_line_rate >= 0) {
			cJSON_AddNumberToObject(x, "line_rate_gbps", o->line_rate_gbps);
			cJSON_AddNumberToObject(x, "pct_line_rate", r->pct_line_rate);
		}
		if (r->perftest_bw > 0) {
			cJSON_AddNumberToObject(x, "ib_write_bw", r->perftest_bw);
			cJSON_AddNumberToObject(x, "ratio_vs_ib_write_bw", r->bw / r->perftest_bw);
		}
		if (r->ndevs > 1 || (r->ndevs && o->fault_down))
			json_devices(x, r);
		cJSON_AddStringToObject(x, "memory", bench_mem_location(o));
		if (r->scheme)
			json_scheme(x, o, r->scheme, r->bw);
		json_samples(x, o, rows, n, i);
		cJSON_AddItemToArray(arr, x);
	}
	/* pdkv / plain socket for every (operation, block size; --scheme: pairs) measured both
	 * ways, best row of each kind (--repeat) */
	arr = cJSON_AddArrayToObject(root, "ratios_vs_socket");
	for (size_t i = 0; i < n; i++) {
		double bp = 0, bs = 0;
		bool first = true;
		cJSON *x;
		for (size_t j = 0; j < i; j++)
			if (same_point(&rows[j], &rows[i]))
				first = false;
		if (!first)
			continue;
		for (size_t j = i; j < n; j++) {
			if (!same_point(&rows[j], &rows[i]))
				continue;
			if (!strcmp(rows[j].kind, "pdkv") && rows[j].bw > bp)
				bp = rows[j].bw;
			if (!strcmp(rows[j].kind, "socket") && rows[j].bw > bs)
				bs = rows[j].bw;
		}
		if (!(bp > 0) || !(bs > 0))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "operation", rows[i].op ? "write" : "read");
		cJSON_AddNumberToObject(x, "block_size", (double)rows[i].block);
		if (rows[i].scheme) {
			cJSON_AddStringToObject(x, "scheme", rows[i].scheme->scheme);
			cJSON_AddNumberToObject(x, "pairs", rows[i].scheme->npairs);
		}
		cJSON_AddNumberToObject(x, "pdkv", bp);
		cJSON_AddNumberToObject(x, "socket", bs);
		cJSON_AddNumberToObject(x, "ratio", bp / bs);
		cJSON_AddItemToArray(arr, x);
	}
	json_meta(root, o);
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return -1;
	ret = pd_write_file(path, txt, strlen(txt));
	free(txt);
	return ret;
}

/* the scheme's columns (empty without --scheme); pair_bw: the pairs' bandwidths, ';'-joined;
 * with --baseline, engine rows: the point's socket aggregate, pdkv/socket, and per pair */
static void csv_scheme(FILE *f, const struct bench_opts *o, const struct bench_scheme_row *sr,
                       double agg_bw)
{
	if (!sr) {
		fprintf(f, ",,,,,,,,,,,,\n");
		return;
	}
	fprintf(f, "%s,%d,%d,%d,%.*f,%.*f,%.4f,%.4f,%.4f,", sr->scheme, sr->npairs, sr->initiators,
	        sr->targets, o->precision + 2, sr->bw_min, o->precision + 2, sr->bw_max,
	        sr->min_max, sr->jain, sr->scaling);
	for (int k = 0; k < sr->npairs; k++)
		fprintf(f, "%s%.*f", k ? ";" : "", o->precision + 2, sr->pairs[k].row.bw);
	fputc(',', f);
	if (sr->socket_bw > 0) /* engine rows with --baseline: the socket's, and pdkv/socket */
		fprintf(f, "%.*f,%.4f,", o->precision + 2, sr->socket_bw, agg_bw / sr->socket_bw);
	else
		fputs(",,", f);
	for (int k = 0; k < sr->npairs && sr->socket_bw > 0; k++)
		fprintf(f, "%s%.4f", k ? ";" : "",
		        sr->pairs[k].socket_bw > 0 ? sr->pairs[k].row.bw / sr->pairs[k].socket_bw
		                                   : 0);
	fprintf(f, "\n");
}

int bench_write_csv(const struct bench_opts *o, const char *path, struct bench_row *rows, size_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(
	    f,
	    "kind,operation,block_size,batch_size,threads,duration_s,batches,transfers,bytes,"
	    "bandwidth_%s_per_s,transfers_per_s,lat_p50_us,lat_p99_us,wrong,failed,cpu_initiator_s,"
	    "cpu_target_s,line_rate_gbps,pct_line_rate,ib_write_bw_%s_per_s,ratio_vs_ib_write_bw,"
	    "scheme,pairs,initiators,targets,pair_bw_min,pair_bw_max,fairness_min_max,"
	    "fairness_jain,scaling,pair_bw,socket_bw_%s_per_s,ratio_vs_socket,pair_ratio_vs_"
	    "socket\n",
	    o->unit, o->unit, o->unit);
	for (size_t i = 0; i < n; i++) {
		struct bench_row *r = &rows[i];
		fprintf(
		    f,
		    "%s,%s,%llu,%llu,%llu,%.6f,%llu,%llu,%llu,%.*f,%.1f,%.2f,%.2f,%llu,%llu,%.3f,"
		    "%.3f,",
		    r->kind, r->op ? "write" : "read", (unsigned long long)r->block,
		    (unsigned long long)r->batch, (unsigned long long)r->threads, r->seconds,
		    (unsigned long long)r->batches, (unsigned long long)r->transfers,
		    (unsigned long long)r->bytes, o->precision + 2, r->bw,
		    r->seconds > 0 ? (double)r->transfers / r->seconds : 0, r->lat_p50_us,
		    r->lat_p99_us, (unsigned long long)r->wrong, (unsigned long long)r->failed,
		    r->cpu_init_s, r->cpu_target_s);
		if (o->line_rate_gbps > 0 && r->pct_line_rate >= 0)
			fprintf(f, "%.3f,%.2f,", o->line_rate_gbps, r->pct_line_rate);
		else
			fprintf(f, ",,");
		if (r->perftest_bw > 0)
			fprintf(f, "%.*f,%.4f,", o->precision + 2, r->perftest_bw,
			        r->bw / r->perftest_bw);
		else
			fprintf(f, ",,");
		csv_scheme(f, o, r->scheme, r->bw);
	}
	return fclose(f) ? -1 : 0;
}
