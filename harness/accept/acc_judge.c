/* SPDX-License-Identifier: Apache-2.0 */
/* acc_judge: which pairs pdkv accept measures (--pairs), what a pair's repeats say (median,
 * spread, uncertain), and the fleet verdict — node medians, the fleet median and the outliers. */
#include "accept.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_stats.h"
#include "pd_util.h"

const char *acc_state_name(enum acc_state s)
{
	static const char *const n[] = {"-", "ok", "SLOW", "UNCERTAIN", "FAILED"};
	return (unsigned)s < PD_ARRAY_SIZE(n) ? n[s] : "?";
}

int acc_pairs_parse(const char *v, struct acc_pairs_spec *ps, char *err, size_t errsz)
{
	char *end;
	long k;
	if (v && !strcmp(v, "all")) {
		*ps = (struct acc_pairs_spec){ACC_PAIRS_ALL, 0};
		return 0;
	}
	if (v && !strcmp(v, "ring")) {
		*ps = (struct acc_pairs_spec){ACC_PAIRS_RING, 0};
		return 0;
	}
	if (v && !strncmp(v, "random:", 7)) {
		errno = 0;
		k = strtol(v + 7, &end, 10);
		if (!errno && end != v + 7 && !*end && k >= 1 && k <= ACC_MAX_PAIRS) {
			*ps = (struct acc_pairs_spec){ACC_PAIRS_RANDOM, (int)k};
			return 0;
		}
	}
	pd_seterr(err, errsz,
	          "--pairs: expected all, ring or random:K (K pairs, 1..%d), got \"%s\"",
	          ACC_MAX_PAIRS, v ? v : "");
	return -1;
}

/* splitmix64: a seeded stream, the same pairs for the same --seed on every host */
static uint64_t mix_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int acc_pairs_make(const struct acc_pairs_spec *ps, int n, uint64_t seed, int (*out)[2], size_t max,
                   char *err, size_t errsz)
{
	int all = n * (n - 1), np = 0;
	if (n < 2) {
		pd_seterr(err, errsz, "need at least 2 nodes to form a pair, got %d", n);
		return -1;
	}
	if ((size_t)all > max) {
		pd_seterr(err, errsz, "%d nodes make %d pairs, over the %zu this build handles", n,
		          all, max);
		return -1;
	}
	if (ps->kind == ACC_PAIRS_RING) {
		for (int i = 0; i < n && (n > 2 || i < 2); i++) {
			out[np][0] = i;
			out[np++][1] = (i + 1) % n;
		}
		return np;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j) {
				out[np][0] = i;
				out[np++][1] = j;
			}
	if (ps->kind == ACC_PAIRS_ALL)
		return np;
	if (ps->k > all) {
		pd_seterr(err, errsz, "--pairs random:%d: %d nodes have only %d ordered pairs",
		          ps->k, n, all);
		return -1;
	}
	/* partial Fisher-Yates: the first K of a seeded shuffle */
	for (int i = 0; i < ps->k; i++) {
		int r = i + (int)(mix_next(&seed) % (uint64_t)(all - i)), t0 = out[i][0],
		    t1 = out[i][1];
		out[i][0] = out[r][0];
		out[i][1] = out[r][1];
		out[r][0] = t0;
		out[r][1] = t1;
	}
	return ps->k;
}

/* A pair's own figures: the median of its repeats, their range and spread. Usable (state
 * ACC_OK for now) when it ran, moved every byte right and has a repeat. */
static void pair_figures(struct acc_pair *p)
{
	p->bw_med = p->lat_med = p->spread = p->lo = p->hi = NAN;
	if (p->error || p->wrong || p->failed) {
		p->state = ACC_FAILED;
		return;
	}
	if (p->nrep < 1) {
		p->state = ACC_UNCERTAIN;
		if (!*p->why)
			snprintf(p->why, sizeof(p->why), "no bench row");
		return;
	}
	p->bw_med = pd_stats_median(p->bw, (size_t)p->nrep);
	p->lat_med = pd_stats_median(p->lat, (size_t)p->nrep);
	pd_stats_minmax(p->bw, (size_t)p->nrep, &p->lo, &p->hi);
	p->spread = p->bw_med > 0 ? (p->hi - p->lo) / p->bw_med : INFINITY;
	p->state = ACC_OK;
}

/* Against the threshold thr: every repeat below is slow, every repeat above ok; repeats on both
 * sides are ok when they agree within --max-spread and their median is above, else uncertain:
 * a pair is never called slow while one of its repeats was not. */
static void pair_verdict(struct acc_pair *p, double thr, const struct acc_judge_opts *jo)
{
	if (p->state != ACC_OK)
		return;
	if (p->nrep < jo->min_reps) {
		p->state = ACC_UNCERTAIN;
		snprintf(p->why, sizeof(p->why),
		         "%d repeat%s, %d needed to see the noise (--repeat)", p->nrep,
		         p->nrep == 1 ? "" : "s", jo->min_reps);
	} else if (p->hi < thr)
		p->state = ACC_SLOW;
	else if (p->lo >= thr)
		p->state = ACC_OK;
	else if (!(p->spread <= jo->max_spread) || p->bw_med < thr) {
		p->state = ACC_UNCERTAIN;
		snprintf(
		    p->why, sizeof(p->why),
		    "repeats %.1f..%.1f straddle the threshold %.1f and spread %.0f%% of their "
		    "median (--max-spread %.0f%%): too noisy to judge",
		    p->lo, p->hi, thr, p->spread * 100, jo->max_spread * 100);
	} else /* straddling, agreeing, their median above: ok (never a false outlier) */
		p->state = ACC_OK;
}

/* Node x: its median over its usable pairs (either direction), its best pair's median (the
 * score: a healthy node needs one healthy peer to show it) and its best single repeat. */
static void node_figures(const struct acc_pair *pairs, size_t np, int x, double *per,
                         struct acc_node_verdict *nv)
{
	size_t c = 0;
	nv->score = nv->best_rep = NAN;
	for (size_t k = 0; k < np; k++) {
		const struct acc_pair *p = &pairs[k];
		if (p->state != ACC_OK || (p->i != x && p->j != x))
			continue;
		per[c++] = p->bw_med;
		if (isnan(nv->score) || p->bw_med > nv->score)
			nv->score = p->bw_med;
		if (isnan(nv->best_rep) || p->hi > nv->best_rep)
			nv->best_rep = p->hi;
	}
	nv->npairs = (int)c;
	nv->median = c ? pd_stats_median(per, c) : NAN;
	nv->state = c ? ACC_OK : ACC_UNCERTAIN;
}

void acc_judge(struct acc_pair *pairs, size_t np, int n, const struct acc_judge_opts *jo,
               struct acc_verdict *v)
{
	double *per = calloc(np ? np : 1, sizeof(double)), scores[ACC_MAX_NODES], thr;
	int ns = 0;
	memset(v, 0, sizeof(*v));
	v->n = n;
	for (size_t k = 0; k < np; k++)
		pair_figures(&pairs[k]);
	for (int x = 0; x < n && x < ACC_MAX_NODES; x++) {
		node_figures(pairs, per ? np : 0, x, per, &v->node[x]);
		if (v->node[x].state == ACC_OK)
			scores[ns++] = v->node[x].score;
	}
	v->fleet_median = ns ? pd_stats_median(scores, (size_t)ns) : NAN;
	thr = jo->threshold * v->fleet_median;
	for (int x = 0; x < n && x < ACC_MAX_NODES; x++) {
		struct acc_node_verdict *nv = &v->node[x];
		if (nv->state != ACC_OK || ns < 2 || nv->score >= thr)
			continue;
		/* even its best single measurement is below: slow, not noise */
		nv->state = nv->best_rep < thr ? ACC_SLOW : ACC_UNCERTAIN;
		v->slow_nodes += nv->state == ACC_SLOW;
	}
	/* pairs: against the median of the pairs between nodes that are not slow (a node's best
	 * pair, the nodes' reference, is the top of its noise; a pair's reference is the middle) */
	v->pair_median = v->fleet_median;
	if (per) {
		size_t c = 0;
		for (size_t k = 0; k < np; k++)
			if (pairs[k].state == ACC_OK && v->node[pairs[k].i].state != ACC_SLOW &&
			    v->node[pairs[k].j].state != ACC_SLOW)
				per[c++] = pairs[k].bw_med;
		if (c)
			v->pair_median = pd_stats_median(per, c);
	}
	free(per);
	for (size_t k = 0; k < np; k++) {
		struct acc_pair *p = &pairs[k];
		if (ns >= 2)
			pair_verdict(p, jo->threshold * v->pair_median, jo);
		else if (p->state == ACC_OK) { /* one node's pairs are their own reference */
			p->state = ACC_UNCERTAIN;
			snprintf(p->why, sizeof(p->why), "fewer than 2 nodes with a usable pair");
		}
		v->judged_pairs += p->state == ACC_OK || p->state == ACC_SLOW;
		v->slow_pairs += p->state == ACC_SLOW;
		v->failed_pairs += p->state == ACC_FAILED;
		v->uncertain_pairs += p->state == ACC_UNCERTAIN;
	}
}

int acc_exit_status(const struct acc_verdict *v)
{
	if (v->failed_pairs || v->slow_pairs || v->slow_nodes)
		return 1;
	return v->judged_pairs ? 0 : 77;
}

int acc_parse_bench(const char *out, struct acc_pair *p)
{
	unsigned long long blk, bat, thr, wrong, failed, maxblk = 0;
	double bw, iops, p50, p99;
	char op[16], first_op[16] = "";
	const char *l;
	/* two passes: the largest block, then its rows of the first operation */
	for (int pass = 0; pass < 2; pass++) {
		p->nrep = 0;
		for (l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			if (sscanf(l, " pdkv %15s %llu %llu %llu %lf %lf %lf %lf %llu %llu", op,
			           &blk, &bat, &thr, &bw, &iops, &p50, &p99, &wrong, &failed) != 10)
				continue;
			if (!pass) {
				if (blk > maxblk)
					maxblk = blk;
				continue;
			}
			if (blk != maxblk)
				continue;
			if (!*first_op)
				snprintf(first_op, sizeof(first_op), "%s", op);
			if (strcmp(op, first_op))
				continue;
			p->wrong += wrong;
			p->failed += failed;
			if (p->nrep < ACC_MAX_REPS) {
				p->bw[p->nrep] = bw;
				p->lat[p->nrep++] = p50;
			}
		}
	}
	return p->nrep;
}
