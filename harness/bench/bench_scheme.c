/* SPDX-License-Identifier: Apache-2.0 */
/* bench_scheme: nixlbench's --scheme on pdkv's engine — which initiator engine moves which share
 * of the bytes to or from which target segment, the engines and spawned targets behind the pairs,
 * and one concurrent run of every pair per row: aggregate, per pair, fairness, scaling. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"
#include "te/te.h"
#include "te/te_gpu.h"

/* One pair's share: initiator engine i, target segment t, len = block x batch x threads bytes at
 * loff in i's regions and roff in t's buffer (windows of one engine never overlap: --check holds
 * while all pairs run at once). */
struct plan_pair {
	int i, t;
	uint64_t block, batch, loff, roff, len;
};
struct plan {
	int ni, nt, np;
	struct plan_pair p[BENCH_MAX_PAIRS];
	uint64_t lneed[BENCH_MAX_PAIRS], rneed[BENCH_MAX_PAIRS]; /* bytes per engine / target */
};

/* Initiator and target engines for n pairs and operation op. tp with --tp-prefill/--tp-decode:
 * read = decode ranks pull from prefill ranks (V0), write = prefill ranks push (V1). */
static void counts(const struct bench_opts *o, int op, int n, int *ni, int *nt)
{
	switch (o->scheme_id) {
	case BENCH_SCHEME_MANYTOONE:
		*ni = n, *nt = 1;
		break;
	case BENCH_SCHEME_ONETOMANY:
		*ni = 1, *nt = n;
		break;
	case BENCH_SCHEME_TP:
		if (o->tp_prefill) {
			*ni = op == BENCH_READ ? o->tp_decode : o->tp_prefill;
			*nt = op == BENCH_READ ? o->tp_prefill : o->tp_decode;
		} else {
			*ni = o->num_init_dev, *nt = o->num_target_dev;
		}
		break;
	default:
		*ni = *nt = n;
	}
}

/* tp: every pair moves 1/hi of the heads (hi = the larger TP). Equal TP: a rank's blocks are
 * whole, its runs stay contiguous (size / hi bytes, o->batch requests). Unequal: a pair's heads
 * are a slice of one side's block (vLLM's HND layout keeps that slice contiguous inside one block
 * only): with --kv-geometry one request per block (2 x layers x blocks), without it every
 * transfer of --block_size is one all-heads block. 0, or -1 when a block is smaller than hi. */
static int tp_shape(const struct bench_opts *o, int ni, int nt, uint64_t size, uint64_t *block,
                    uint64_t *batch)
{
	uint64_t hi = (uint64_t)(ni > nt ? ni : nt);
	*block = size / hi;
	*batch = o->batch;
	if (ni != nt && o->kv_geom[0]) {
		uint64_t bt = o->kv_block_tokens ? (uint64_t)o->kv_block_tokens : 16;
		uint64_t n = o->kv_prompt_tokens ? (uint64_t)o->kv_prompt_tokens : 1024;
		uint64_t blen = bt * (uint64_t)o->kv_geom[1] * (uint64_t)o->kv_geom[2] *
		                (uint64_t)o->kv_geom[3];
		*block = blen / hi;
		*batch = 2 * (uint64_t)o->kv_geom[0] * ((n + bt - 1) / bt);
	}
	return *block ? 0 : -1;
}

static int make_plan(const struct bench_opts *o, int op, int n, uint64_t size, struct plan *pl)
{
	uint64_t block = size, batch = o->batch;
	memset(pl, 0, sizeof(*pl));
	counts(o, op, n, &pl->ni, &pl->nt);
	if (o->scheme_id == BENCH_SCHEME_TP && tp_shape(o, pl->ni, pl->nt, size, &block, &batch)) {
		fprintf(stderr,
		        "pdkv-bench: --scheme=tp: a %llu-byte block does not split into %d "
		        "head slices\n",
		        (unsigned long long)size, pl->ni > pl->nt ? pl->ni : pl->nt);
		return -1;
	}
	pl->np = pl->ni > pl->nt ? pl->ni : pl->nt;
	for (int k = 0; k < pl->np; k++) {
		struct plan_pair *p = &pl->p[k];
		/* pairwise: k <-> k; manytoone / onetomany: everyone <-> the one; tp: each rank of
		 * the smaller side covers hi/lo consecutive ranks of the larger (head overlap) */
		if (pl->ni >= pl->nt) {
			p->i = k;
			p->t = k / (pl->ni / pl->nt);
		} else {
			p->i = k / (pl->nt / pl->ni);
			p->t = k;
		}
		p->block = block;
		p->batch = batch;
		p->len = block * batch * o->threads;
		p->loff = pl->lneed[p->i];
		p->roff = pl->rneed[p->t];
		pl->lneed[p->i] += p->len;
		pl->rneed[p->t] += p->len;
	}
	return 0;
}

/* The engines and targets every point of the sweep needs, and their sizes. */
struct setup {
	int ni, nt;
	uint64_t lregion, rregion;
	struct bench_te *ep[BENCH_MAX_PAIRS];
	struct bench_opts eo[BENCH_MAX_PAIRS]; /* endpoint i's options: --use_vram's device */
	char *segs[BENCH_MAX_PAIRS];
	char *socks[BENCH_MAX_PAIRS]; /* --baseline: target t's socket host:port */
	struct bench_loop_target lt[BENCH_MAX_PAIRS];
	char *seglist, *socklist; /* initiator mode: --segment_id, --baseline_server split */
};

/* A comma list split in place into at most BENCH_MAX_PAIRS entries; their number. */
static int split_list(char *list, char **out)
{
	char *save = NULL;
	int n = 0;
	for (char *tok = list ? strtok_r(list, ",", &save) : NULL; tok && n < BENCH_MAX_PAIRS;
	     tok = strtok_r(NULL, ",", &save))
		out[n++] = tok;
	return n;
}

static int size_all(const struct bench_opts *o, const struct bench_run_ops *ro,
                    const uint64_t *sizes, size_t ns, struct setup *su)
{
	for (int k = 0; k < ro->nops; k++)
		for (int pt = 0; pt < o->npoints; pt++)
			for (size_t s = 0; s < ns; s++) {
				struct plan pl;
				if (make_plan(o, ro->ops[k], o->pairs[pt], sizes[s], &pl))
					return 2;
				su->ni = pl.ni > su->ni ? pl.ni : su->ni;
				su->nt = pl.nt > su->nt ? pl.nt : su->nt;
				for (int e = 0; e < BENCH_MAX_PAIRS; e++) {
					if (pl.lneed[e] > su->lregion)
						su->lregion = pl.lneed[e];
					if (pl.rneed[e] > su->rregion)
						su->rregion = pl.rneed[e];
				}
			}
	return 0;
}

/* Targets: loopback spawns su->nt of them (all started, then waited for); the initiator takes
 * them from --segment_id=A,B,... */
static int targets_up(struct bench_opts *o, const struct bench_run_ops *ro, struct setup *su)
{
	uint64_t buf = ro->buffer_given ? o->buffer_size : su->rregion;
	int rc = 0, n = 0;
	if (o->mode_id == BENCH_INITIATOR) {
		su->seglist = strdup(o->segment);
		n = split_list(su->seglist, su->segs);
		if (n < su->nt) {
			fprintf(stderr,
			        "pdkv-bench: --scheme=%s needs %d target segments: give them as "
			        "--segment_id=A,B,... (got %d)\n",
			        o->scheme, su->nt, n);
			return 2;
		}
		if (o->baseline_id == BENCH_BASELINE_NONE)
			return 0;
		su->socklist = strdup(o->baseline_server);
		n = split_list(su->socklist, su->socks);
		if (n < su->nt) {
			fprintf(stderr,
			        "pdkv-bench: --scheme=%s --baseline=%s needs %d socket addresses, "
			        "one per target in --segment_id's order: give them as "
			        "--baseline_server=H:P,H:P,... (got %d)\n",
			        o->scheme, o->baseline, su->nt, n);
			return 2;
		}
		return 0;
	}
	if (buf < 4096)
		buf = 4096;
	o->buffer_size = buf;
	for (int t = 0; t < su->nt && !rc; t++) {
		struct bench_opts to = *o;
		to.target_gpu_id = bench_scheme_gpu(o, true, t);
		rc = bench_loop_spawn(&to, buf, t, &su->lt[t]);
	}
	for (int t = 0; t < su->nt && !rc; t++) {
		rc = bench_loop_wait(&su->lt[t]);
		su->segs[t] = su->lt[t].seg;
		su->socks[t] = su->lt[t].sockaddr;
		if (!rc && o->baseline_id != BENCH_BASELINE_NONE && !strcmp(su->socks[t], "-")) {
			fprintf(stderr,
			        "pdkv-bench: spawned target %d did not start its socket "
			        "baseline\n",
			        t);
			rc = 1;
		}
	}
	return rc;
}

static int targets_down(struct setup *su, int rc)
{
	for (int t = 0; t < su->nt; t++)
		rc = bench_loop_stop(&su->lt[t], rc);
	free(su->seglist);
	free(su->socklist);
	return rc;
}

static double targets_cpu(const struct setup *su)
{
	double sum = 0;
	for (int t = 0; t < su->nt; t++) {
		double c = bench_cpu_of(su->lt[t].proc.pid);
		sum += c > 0 ? c : 0;
	}
	return sum;
}

/* The aggregate of one concurrent run: bytes summed over the pairs, over the slowest pair's
 * transfer time (all pairs ran for the same duration); latency of the worst pair. */
static void aggregate(const struct bench_opts *o, struct bench_lane *lanes, struct plan *pl,
                      struct bench_row *agg, struct bench_scheme_row *sr)
{
	double sum = 0, sq = 0;
	memset(agg, 0, sizeof(*agg));
	agg->kind = lanes[0].be->kind;
	agg->op = o->op;
	agg->block = pl->p[0].block;
	agg->batch = pl->p[0].batch;
	agg->threads = o->threads;
	sr->bw_min = -1;
	for (int k = 0; k < pl->np; k++) {
		struct bench_row *r = &lanes[k].row;
		sr->pairs[k] = (struct bench_pair_row){pl->p[k].i, pl->p[k].t, *r, 0};
		agg->batches += r->batches;
		agg->transfers += r->transfers;
		agg->bytes += r->bytes;
		agg->wrong += r->wrong;
		agg->failed += r->failed;
		agg->seconds = r->seconds > agg->seconds ? r->seconds : agg->seconds;
		agg->wall = r->wall > agg->wall ? r->wall : agg->wall;
		agg->lat_p50_us = r->lat_p50_us > agg->lat_p50_us ? r->lat_p50_us : agg->lat_p50_us;
		agg->lat_p99_us = r->lat_p99_us > agg->lat_p99_us ? r->lat_p99_us : agg->lat_p99_us;
		sum += r->bw;
		sq += r->bw * r->bw;
		sr->bw_max = r->bw > sr->bw_max ? r->bw : sr->bw_max;
		sr->bw_min = sr->bw_min < 0 || r->bw < sr->bw_min ? r->bw : sr->bw_min;
	}
	agg->bw = bench_bw(o, agg->bytes, agg->seconds);
	sr->min_max = sr->bw_max > 0 ? sr->bw_min / sr->bw_max : 0;
	sr->jain = sq > 0 ? sum * sum / ((double)pl->np * sq) : 0; /* Jain's fairness index */
	agg->pct_line_rate =
	    o->line_rate_gbps > 0 && agg->seconds > 0
	        ? (double)agg->bytes * 8 / agg->seconds / 1e9 / o->line_rate_gbps * 100
	        : -1;
	agg->scheme = sr;
}

struct srun {
	struct bench_opts *o;
	struct setup *su;
	struct bench_row rows[256];
	size_t nrows;
	int rc;
};

/* The point's lanes on one back-end: the engine's windows on the endpoints (lt[k] to free), or
 * the same windows through the targets' sockets (initiator i's local windows at i x lregion).
 * 0, or -1 with the reason printed. */
static int point_lanes(struct srun *r, const struct plan *pl, bool sock, struct bench_opts *lo,
                       struct bench_lane *lanes, struct bench_te **lt, struct bench_sock_ctx *sc)
{
	struct setup *su = r->su;
	for (int k = 0; k < pl->np; k++) {
		const struct plan_pair *p = &pl->p[k];
		lo[k] = *r->o;
		lo[k].batch = p->batch;
		lo[k].gpu_id = su->eo[p->i].gpu_id; /* --check's copies to and from its memory */
		lanes[k] = (struct bench_lane){.o = &lo[k], .block = p->block};
		if (sock) {
			if (bench_sock_ctx_init(&sc[k], su->socks[p->t], p->roff,
			                        (uint64_t)p->i * su->lregion + p->loff))
				return -1;
			lanes[k].be = &bench_sock_backend;
			lanes[k].ctx = &sc[k];
		} else {
			if (bench_te_lane(su->ep[p->i], su->segs[p->t], p->roff, p->loff, p->len,
			                  &lt[k]))
				return -1;
			lanes[k].be = &bench_te_backend;
			lanes[k].ctx = lt[k];
		}
	}
	return 0;
}

/* One concurrent run of the point's lanes: its aggregate kept, printed and judged (wrong bytes,
 * failed transfers, --min-bw for the engine). The aggregate's bandwidth, or -1 on an error. */
static double run_rep(struct srun *r, struct bench_lane *lanes, struct plan *pl)
{
	struct bench_opts *o = r->o;
	struct bench_scheme_row *sr;
	struct bench_row *agg = &r->rows[r->nrows];
	double c0 = bench_cpu_self(), t0 = targets_cpu(r->su);
	bool pdkv = lanes[0].be == &bench_te_backend;
	int err;

	if (r->nrows >= PD_ARRAY_SIZE(r->rows))
		return -1;
	sr = calloc(1, sizeof(*sr));
	if (!sr || !(sr->pairs = calloc((size_t)pl->np, sizeof(*sr->pairs)))) {
		free(sr);
		return -1;
	}
	err = bench_run_lanes(lanes, (size_t)pl->np);
	if (err)
		fprintf(stderr, "pdkv-bench: %s error: %s\n", pdkv ? "transfer" : "socket baseline",
		        pdkv ? te_strerror(err) : strerror(-err));
	*sr = (struct bench_scheme_row){.scheme = o->scheme,
	                                .initiators = pl->ni,
	                                .targets = pl->nt,
	                                .npairs = pl->np,
	                                .tp_prefill = o->tp_prefill,
	                                .tp_decode = o->tp_decode,
	                                .pairs = sr->pairs};
	aggregate(o, lanes, pl, agg, sr);
	agg->cpu_init_s = bench_cpu_self() - c0;
	agg->cpu_target_s = o->mode_id == BENCH_LOOPBACK ? targets_cpu(r->su) - t0 : 0;
	r->nrows++;
	bench_scheme_pairs_print(o, agg);
	if (err || agg->wrong || agg->failed) {
		fprintf(stderr,
		        "pdkv-bench: %s %s %s %llu B, %d pairs: %llu wrong bytes, %llu failed "
		        "transfers\n",
		        agg->kind, o->scheme, o->op ? "write" : "read",
		        (unsigned long long)agg->block, pl->np, (unsigned long long)agg->wrong,
		        (unsigned long long)agg->failed);
		r->rc = 1;
	}
	if (pdkv && o->min_bw > 0 && agg->bw < o->min_bw) {
		fprintf(stderr, "pdkv-bench: BW result %.*f %s/s is below --min-bw %g\n",
		        o->precision, agg->bw, o->unit, o->min_bw);
		r->rc = 1;
	}
	return err ? -1 : agg->bw;
}

/* --baseline=socket: every engine row of the point (rows from `first`) gets the best socket
 * aggregate's figures, as a whole and per pair; then the point's ratio lines. */
static void point_ratio(struct srun *r, size_t first, uint64_t size)
{
	struct bench_row *bp = NULL, *bs = NULL;
	for (size_t j = first; j < r->nrows; j++) {
		struct bench_row **b = strcmp(r->rows[j].kind, "socket") ? &bp : &bs;
		if (!*b || r->rows[j].bw > (*b)->bw)
			*b = &r->rows[j];
	}
	if (!bp || !bs || !(bs->bw > 0))
		return;
	for (size_t j = first; j < r->nrows; j++) {
		struct bench_scheme_row *sr = r->rows[j].scheme;
		if (!strcmp(r->rows[j].kind, "socket"))
			continue;
		sr->socket_bw = bs->bw;
		for (int k = 0; k < sr->npairs && k < bs->scheme->npairs; k++)
			sr->pairs[k].socket_bw = bs->scheme->pairs[k].row.bw;
	}
	bench_scheme_ratio_print(r->o, size, bp);
}

/* One point (pairs, size) of one operation, --repeat times: socket (--baseline) and engine
 * runs interleaved, each all pairs at once, the rows kept. best[0]: the engine's best aggregate,
 * best[1]: the socket's (0 = not run; -1 = an error). */
static void run_point(struct srun *r, int n, uint64_t size, double best[2])
{
	struct bench_opts *o = r->o, lo[BENCH_MAX_PAIRS];
	struct bench_lane lanes[BENCH_MAX_PAIRS], slanes[BENCH_MAX_PAIRS];
	struct bench_sock_ctx sc[BENCH_MAX_PAIRS];
	struct bench_te *lt[BENCH_MAX_PAIRS] = {0};
	bool want_s = o->baseline_id != BENCH_BASELINE_NONE;
	bool want_p = o->baseline_id != BENCH_BASELINE_SOCKET_ONLY;
	size_t first = r->nrows;
	struct plan pl;

	best[0] = want_p ? -1 : 0;
	best[1] = want_s ? -1 : 0;
	pl.np = 0;
	if (make_plan(o, o->op, n, size, &pl) ||
	    (want_p && point_lanes(r, &pl, false, lo, lanes, lt, sc)) ||
	    (want_s && point_lanes(r, &pl, true, lo, slanes, lt, sc)))
		goto out;
	for (int rep = 0; rep < o->repeat; rep++) {
		double b;
		if (want_s && (b = run_rep(r, slanes, &pl)) > best[1])
			best[1] = b;
		if (want_p && (b = run_rep(r, lanes, &pl)) > best[0])
			best[0] = b;
	}
	if (want_s && want_p)
		point_ratio(r, first, size);
out:
	for (int k = 0; k < pl.np; k++)
		bench_te_fini(lt[k]);
	if (best[0] < 0 || best[1] < 0)
		r->rc = 1;
}

/* "# scaling ..." for one back-end's best aggregates over the points (kind NULL: the engine's,
 * as before the socket baseline existed) */
static void print_scaling(const struct bench_opts *o, const char *kind, uint64_t size,
                          const double *best)
{
	printf(
	    "# scaling %s%s%s %s %llu B (aggregate / aggregate at %d pair%s%s):", kind ? kind : "",
	    kind ? " " : "", o->scheme, o->op ? "write" : "read", (unsigned long long)size,
	    o->pairs[0], o->pairs[0] > 1 ? "s" : "", o->repeat > 1 ? ", best of each" : "");
	for (int pt = 0; pt < o->npoints; pt++)
		printf("%s %d: %.*f %s/s = %.2fx", pt ? " |" : "", o->pairs[pt], o->precision,
		       best[pt] > 0 ? best[pt] : 0, o->unit,
		       best[0] > 0 && best[pt] > 0 ? best[pt] / best[0] : 0);
	printf("\n");
	fflush(stdout);
}

/* Every operation, size and point; after a size's points, the scaling lines (and each row's
 * scaling against the first point's best aggregate of its own kind). */
static void run_all(struct srun *r, const struct bench_run_ops *ro, const uint64_t *sizes,
                    size_t ns)
{
	struct bench_opts *o = r->o;
	bench_table_header(o);
	for (int k = 0; k < ro->nops; k++) {
		o->op = ro->ops[k];
		for (size_t s = 0; s < ns; s++) {
			double best[2][BENCH_MAX_POINTS] = {{0}}, b[2];
			size_t first = r->nrows;
			for (int pt = 0; pt < o->npoints; pt++) {
				run_point(r, o->pairs[pt], sizes[s], b);
				best[0][pt] = b[0];
				best[1][pt] = b[1];
			}
			for (size_t j = first; j < r->nrows; j++) {
				struct bench_scheme_row *sr = r->rows[j].scheme;
				double base = best[strcmp(r->rows[j].kind, "socket") ? 0 : 1][0];
				sr->scaling_base = o->pairs[0];
				sr->scaling = base > 0 ? r->rows[j].bw / base : 0;
			}
			if (o->npoints < 2)
				continue;
			if (o->baseline_id != BENCH_BASELINE_NONE)
				print_scaling(o, "socket", sizes[s], best[1]);
			if (o->baseline_id != BENCH_BASELINE_SOCKET_ONLY)
				print_scaling(o, NULL, sizes[s], best[0]);
		}
	}
}

static void free_rows(struct srun *r)
{
	for (size_t j = 0; j < r->nrows; j++) {
		if (!r->rows[j].scheme)
			continue;
		free(r->rows[j].scheme->pairs);
		free(r->rows[j].scheme);
	}
}

int bench_scheme_main(struct bench_opts *o, const struct bench_run_ops *ro, const uint64_t *sizes,
                      size_t ns)
{
	static struct setup su;
	static struct srun r;
	int rc;

	memset(&su, 0, sizeof(su));
	memset(&r, 0, sizeof(r));
	if (o->use_vram) {
		char why[256] = "";
		o->scheme_ngpu = te_gpu_device_count(why, sizeof(why));
		if (o->scheme_ngpu <= 0) { /* bench_gpu_require said so already; a safety net */
			fprintf(stderr, "pdkv-bench: --scheme --use_vram: no CUDA device (%s)\n",
			        why);
			return 77;
		}
	}
	r.o = o;
	r.su = &su;
	if ((rc = size_all(o, ro, sizes, ns, &su)))
		return rc;
	if ((rc = targets_up(o, ro, &su)))
		return targets_down(&su, rc);
	for (int i = 0; i < su.ni && !rc && o->baseline_id != BENCH_BASELINE_SOCKET_ONLY; i++) {
		su.eo[i] = *o;
		su.eo[i].gpu_id = bench_scheme_gpu(o, false, i);
		rc = bench_te_endpoint(&su.eo[i], su.lregion, i, &su.ep[i]);
	}
	if (!rc && o->baseline_id != BENCH_BASELINE_NONE)
		rc = bench_sock_prepare((uint64_t)su.ni * su.lregion);
	if (!rc && o->protocol && !strcmp(o->protocol, "rdma")) {
		static char lrdesc[512];
		if (!bench_rdma_line_rate(o->device, &o->line_rate_gbps, lrdesc, sizeof(lrdesc)))
			fprintf(stderr, "pdkv-bench: no %% of line rate in this report: %s\n",
			        lrdesc);
		o->line_rate_desc = lrdesc;
	}
	if (!rc) {
		const char *local = su.ep[0] ? bench_te_local_name(su.ep[0]) : "-";
		bench_banner(o, local, su.segs[0], su.rregion);
		bench_scheme_banner(o, su.ni, su.nt, su.lregion, su.rregion);
		run_all(&r, ro, sizes, ns);
		rc = r.rc;
		if (o->json && bench_write_json(o, o->json, r.rows, r.nrows, local, su.segs[0])) {
			fprintf(stderr, "pdkv-bench: cannot write --json %s\n", o->json);
			rc = 1;
		}
		if (o->csv && bench_write_csv(o, o->csv, r.rows, r.nrows)) {
			fprintf(stderr, "pdkv-bench: cannot write --csv %s\n", o->csv);
			rc = 1;
		}
	}
	free_rows(&r);
	for (int i = 0; i < su.ni; i++)
		bench_te_fini(su.ep[i]);
	return targets_down(&su, rc);
}
