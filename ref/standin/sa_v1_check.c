/* sa_v1_check: the V1 consumer's check of the KV blocks it receives — hashed in the checksum's
 * order while the producer's WRITEs land (kv1_landed), so the check mostly overlaps the
 * transfer; a streamed request's first token goes out before the check ends (sa_verify_wait). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_par.h"
#include "pd_util.h"
#include "sa.h"

/* One part of mdl_kv_checksum (a layer's keys or values) per item, in the order the producer
 * writes them (every layer's keys, then values), hashed once it has landed on every rank. */
struct follow {
	struct sa_verify *v;
	uint64_t *sums;
	atomic_int ret;
	atomic_bool early;
	atomic_uint_fast64_t t_last; /* when the last part was hashed */
};

struct sa_verify {
	struct sa *s;
	struct pd_par par;
	struct follow f;
	bool live; /* par not finished yet */
	int dp;
	size_t ntok, nb;
	int64_t *tokens, *blk[SA_MAX_TP];
	bool own;        /* the blocks are this check's to free (a streamed request's) */
	atomic_int done; /* the receive: 0 running, 1 ok, -1 failed (kv1_landed_done) */
	bool early;      /* a layer was hashed before the receive ended */
	int ret;
	uint64_t got, expect, t_arrived, t_done, t_handover;
	char id[96], stages[256];
};

static void follow_part(void *ud, int part, int worker)
{
	struct follow *f = ud;
	struct sa_verify *v = f->v;
	struct sa *s = v->s;
	const struct mdl_geom *g = &s->o.geom;
	size_t seg = mdl_kv_row_bytes(g) * (size_t)(g->kv_heads / s->o.tp);
	bool value = part >= g->layers;
	int l = part % g->layers;
	struct mdl_ks h;

	(void)worker;
	if (atomic_load(&f->ret))
		return;
	for (int k = 0; k < s->o.tp; k++) {
		int r = kv1_landed_wait(s->w[v->dp][k], sa_v1_buf(s, value, l), v->blk[k], v->nb,
		                        &v->done);
		if (r) {
			atomic_store(&f->ret, r);
			return;
		}
	}
	if (!atomic_load(&v->done))
		atomic_store(&f->early, true);
	mdl_ks_init(&h, mdl_kv_part_seed(part), mdl_kv_row_bytes(g));
	for (size_t t = 0; t < v->ntok; t++)
		for (int k = 0; k < s->o.tp; k++)
			mdl_ks_update(&h, sa_v1_seg(s, v->dp, v->blk, value, l, t, k), seg);
	f->sums[part] = mdl_ks_final(&h);
	for (uint64_t now = pd_now_ns(), t = atomic_load(&f->t_last);
	     t < now && !atomic_compare_exchange_weak(&f->t_last, &t, now);)
		;
}

/* The parts the workers left are hashed here, at the caller's priority; then the sum. */
static void follow_finish(struct sa_verify *v)
{
	int np = 2 * v->s->o.geom.layers;

	if (!v->live)
		return;
	pd_par_finish(&v->par);
	v->live = false;
	v->ret = atomic_load(&v->f.ret);
	v->early = atomic_load(&v->f.early);
	if (!v->ret)
		v->got = mdl_kv_combine(v->f.sums, np);
	v->t_done = atomic_load(&v->f.t_last);
	if (!v->t_done)
		v->t_done = pd_now_ns();
}

struct sa_verify *sa_check_start(struct sa *s, const struct sa_req *r, int64_t **blk, size_t nb)
{
	struct sa_verify *v = calloc(1, sizeof(*v));

	if (!v || !(v->tokens = malloc(r->ntok * sizeof(*v->tokens)))) {
		free(v);
		return NULL;
	}
	v->s = s;
	v->dp = r->dp;
	v->ntok = r->ntok;
	v->nb = nb;
	memcpy(v->tokens, r->tokens, r->ntok * sizeof(*v->tokens));
	memcpy(v->blk, blk, sizeof(v->blk));
	snprintf(v->id, sizeof(v->id), "%s", r->id);
	for (int k = 0; k < s->o.tp; k++)
		kv1_landed_reset(s->w[r->dp][k], blk[k], nb);
	v->f.v = v;
	if (!(v->f.sums = calloc(2 * (size_t)s->o.geom.layers, sizeof(uint64_t)))) {
		free(v->tokens);
		free(v);
		return NULL;
	}
	/* below the transfer's threads, as the expected checksum's: on a small host they hash in
	 * the cycles the transfer leaves, and what they could not finish sa_check_join does */
	pd_par_start(&v->par, pd_par_threads(), 2 * s->o.geom.layers, follow_part, &v->f, true);
	v->live = true;
	return v;
}

void sa_check_transfer_done(struct sa_verify *v, bool ok, uint64_t t_arrived)
{
	v->t_arrived = t_arrived;
	for (int k = 0; k < v->s->o.tp; k++)
		kv1_landed_done(v->s->w[v->dp][k], &v->done, ok);
}

static uint8_t *map_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct sa_verify *v = ud;

	return sa_v1_seg(v->s, v->dp, v->blk, value, l, t, k);
}

int sa_check_join(struct sa_verify *v, uint64_t expect, uint64_t *got)
{
	follow_finish(v);
	if (v->ret)
		return v->ret;
	/* a layer hashed before the receive ended may have held a stale write's bytes that the
	 * transfer then replaced: a mismatch is only believed from a hash of the final blocks */
	if (v->got != expect && v->early) {
		struct sa_kvmap map = {map_seg, v};
		int r =
		    sa_kv_scan(&v->s->o.geom, v->tokens, v->ntok, v->s->o.tp, &map, &v->got, NULL);

		v->t_done = pd_now_ns();
		if (r)
			return r;
	}
	*got = v->got;
	return 0;
}

uint64_t sa_check_done_ns(const struct sa_verify *v)
{
	return v->t_done;
}

void sa_check_free(struct sa_verify *v)
{
	if (!v)
		return;
	if (v->live) {
		if (!atomic_load(&v->done))
			sa_check_transfer_done(v, false, 0);
		follow_finish(v);
	}
	free(v->f.sums);
	for (int k = 0; v->own && k < v->s->o.tp; k++) {
		kv1_free(v->s->w[v->dp][k], v->blk[k], v->nb);
		free(v->blk[k]);
	}
	free(v->tokens);
	free(v);
}

void sa_check_hand_over(struct sa_req *r, struct sa_verify *v, int64_t **blk, uint64_t expect)
{
	v->own = true;
	v->expect = expect;
	memset(blk, 0, sizeof(int64_t *) * SA_MAX_TP);
	snprintf(v->stages, sizeof(v->stages), "%s", r->stages);
	r->seed = expect;
	r->verify = v;
	v->t_handover = pd_now_ns();
}

/* Streamed: the first token came from the prompt's expected checksum; a mismatch fails the
 * stream (the token already sent did not follow the blocks). */
int sa_verify_wait(struct sa_req *r)
{
	struct sa_verify *v = r->verify;
	struct sa *s;
	uint64_t got = 0, t0 = pd_now_ns();
	int ret;

	if (!v)
		return 0;
	s = v->s;
	r->verify = NULL;
	ret = sa_check_join(v, v->expect, &got);
	if (!ret && got != v->expect) {
		atomic_fetch_add(&s->n.checksum_failures, 1);
		pd_warn(
		    "request %s: the KV in the received blocks is not the prompt's (checksum "
		    "%016llx, expected %016llx): its first token was streamed from the prompt's "
		    "checksum, so the stream ends with an error",
		    v->id, (unsigned long long)got, (unsigned long long)v->expect);
		ret = -EBADMSG;
	}
	/* verified: the hash of what landed done and the expected checksum known */
	r->t_kv_verified = v->t_done > v->t_handover ? v->t_done : v->t_handover;
	v->t_done = r->t_kv_verified;
	if (!ret)
		sa_metrics_handoff(s, (double)(v->t_done - v->t_arrived) / 1e9,
		                   mdl_kv_bytes_per_token(&s->o.geom, s->o.geom.kv_heads) *
		                       v->ntok);
	pd_dbg("request %s: handoff kv_ready=0 kv_verified=%llu tokens=%zu ms:%s check_after=%.1f "
	       "stream_wait=%.1f (streamed: checked after the first token)",
	       v->id, (unsigned long long)v->t_done, v->ntok, v->stages,
	       v->t_done > v->t_arrived ? (double)(v->t_done - v->t_arrived) / 1e6 : 0.0,
	       (double)(pd_now_ns() - t0) / 1e6);
	sa_check_free(v);
	return ret;
}
