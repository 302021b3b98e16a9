/* SPDX-License-Identifier: Apache-2.0 */
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
	/* parts summed as their pieces landed (sa_v1_piece): sums and bytes, atomics; a part
	 * whose bytes add up to the whole part needs no read-back */
	uint64_t *facc, *fbytes;
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

/* A consumer worker's blocks -> the check they are received for (and the block's place in the
 * request); the lock lets a check's end wait out a piece being summed for it. */
struct sa_owners {
	struct sa *s;
	int dp, rank;
	pthread_rwlock_t lk;
	size_t n;
	struct sa_owner {
		struct sa_verify *v;
		size_t j; /* the request's j-th block */
	} e[];
};

struct sa_owners *sa_owners_new(struct sa *s, int dp, int rank, size_t nblocks)
{
	struct sa_owners *o = calloc(1, sizeof(*o) + nblocks * sizeof(o->e[0]));

	if (!o)
		return NULL;
	o->s = s;
	o->dp = dp;
	o->rank = rank;
	o->n = nblocks;
	pthread_rwlock_init(&o->lk, NULL);
	return o;
}

void sa_owners_free(struct sa_owners *o)
{
	if (o) {
		pthread_rwlock_destroy(&o->lk);
		free(o);
	}
}

/* The check's blocks on every rank point to it (on) or to nothing (off; only those still its). */
static void own_blocks(struct sa_verify *v, bool on)
{
	for (int k = 0; k < v->s->o.tp; k++) {
		struct sa_owners *o = v->s->own[v->dp][k];

		if (!o)
			continue;
		pthread_rwlock_wrlock(&o->lk);
		for (size_t j = 0; j < v->nb; j++) {
			int64_t b = v->blk[k][j];

			if (b < 0 || (size_t)b >= o->n)
				continue;
			if (on)
				o->e[b] = (struct sa_owner){v, j};
			else if (o->e[b].v == v)
				o->e[b].v = NULL;
		}
		pthread_rwlock_unlock(&o->lk);
	}
}

/* Sums the rows of whole tokens in a piece of a part (layer, keys or values) that starts off
 * bytes into the part's rows of the request's j-th block, at their place in the part (position
 * t, head: row t * heads + rank's first head + h). */
static void piece_part(struct sa_owners *o, struct sa_verify *v, int part, size_t j, size_t off,
                       const uint8_t *data, size_t len)
{
	const struct mdl_geom *g = &o->s->o.geom;
	size_t rb = mdl_kv_row_bytes(g), H = (size_t)g->kv_heads, hs = H / (size_t)o->s->o.tp,
	       tokb = hs * rb;
	size_t t0 = j * (size_t)o->s->o.block_size + off / tokb, nt = len / tokb;
	struct mdl_ks ks;
	uint64_t acc = 0;

	if (t0 >= v->ntok || !nt)
		return;
	nt = nt < v->ntok - t0 ? nt : v->ntok - t0;
	mdl_ks_init(&ks, mdl_kv_part_seed(part), rb);
	if (hs == H) /* one rank: a block's rows are its part's, in order */
		acc = mdl_ks_piece(&ks, t0 * H, data, nt * tokb);
	else
		for (size_t i = 0; i < nt; i++)
			acc += mdl_ks_piece(&ks, (t0 + i) * H + (size_t)o->rank * hs,
			                    data + i * tokb, tokb);
	__atomic_fetch_add(&v->facc[part], acc, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&v->fbytes[part], nt * tokb, __ATOMIC_SEQ_CST);
}

/* A piece of a head-major block (SA_KV_HEADS: [head][token][K | V]) of layer l, off bytes into
 * the request's j-th block, of whole cells: each cell's K row summed into the layer's keys, its V
 * row into its values, at their place (position t, head: row t * heads + rank's first head + h). */
static void piece_heads(struct sa_owners *o, struct sa_verify *v, int l, size_t j, size_t off,
                        const uint8_t *data, size_t len)
{
	const struct mdl_geom *g = &o->s->o.geom;
	size_t rb = mdl_kv_row_bytes(g), H = (size_t)g->kv_heads, hs = H / (size_t)o->s->o.tp,
	       bs = (size_t)o->s->o.block_size, cell = 2 * rb;
	struct mdl_ks kk, kv;
	uint64_t ak = 0, av = 0, n = 0;

	mdl_ks_init(&kk, mdl_kv_part_seed(l), rb);
	mdl_ks_init(&kv, mdl_kv_part_seed(g->layers + l), rb);
	for (size_t c = off / cell, e = (off + len) / cell; c < e; c++, data += cell) {
		size_t h = c / bs, t = j * bs + c % bs, row = t * H + (size_t)o->rank * hs + h;

		if (h >= hs || t >= v->ntok)
			continue;
		ak += mdl_ks_piece(&kk, row, data, rb);
		av += mdl_ks_piece(&kv, row, data + rb, rb);
		n += rb;
	}
	__atomic_fetch_add(&v->facc[l], ak, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&v->fbytes[l], n, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&v->facc[g->layers + l], av, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&v->fbytes[g->layers + l], n, __ATOMIC_SEQ_CST);
}

/* kv1's on_piece, on the engine's server thread right after the receive: the rows of whole
 * tokens in this piece of block `block` of KV buffer `buf` are summed into their part while
 * they are in this core's cache. Split buffers: buffer 2 l + values is one part. Joined (one
 * buffer per layer, a block = [K rows | V rows]): a piece that crosses the middle of the block
 * is cut there, its halves summed into the layer's keys and values. Head-major (SA_KV_HEADS):
 * each [K | V] cell's halves go to the layer's keys and values. A piece not cut at tokens
 * is left to the read-back (its bytes are not counted, so its part is not complete here). */
void sa_v1_piece(void *ud, int buf, int64_t block, size_t off, const uint8_t *data, size_t len)
{
	struct sa_owners *o = ud;
	struct sa *s = o->s;
	const struct mdl_geom *g = &s->o.geom;
	size_t tokb = mdl_kv_row_bytes(g) * (size_t)(g->kv_heads / s->o.tp),
	       half = tokb * (size_t)s->o.block_size;
	struct sa_verify *v;

	if (s->kv_layout == SA_KV_HEADS) { /* whole [K | V] cells */
		size_t cell = 2 * mdl_kv_row_bytes(g);

		if (block < 0 || (size_t)block >= o->n || off % cell || len % cell)
			return;
		pthread_rwlock_rdlock(&o->lk);
		v = o->e[block].v;
		if (v && v->facc)
			piece_heads(o, v, buf, o->e[block].j, off, data, len);
		pthread_rwlock_unlock(&o->lk);
		return;
	}
	if (block < 0 || (size_t)block >= o->n || off % tokb || len % tokb)
		return;
	pthread_rwlock_rdlock(&o->lk);
	v = o->e[block].v;
	if (v && v->facc && s->kv_layout == SA_KV_JOINED && off + len <= 2 * half) {
		size_t k = off < half ? (len < half - off ? len : half - off) : 0;

		if (k)
			piece_part(o, v, buf, o->e[block].j, off, data, k);
		if (len > k)
			piece_part(o, v, g->layers + buf, o->e[block].j, off + k - half, data + k,
			           len - k);
	} else if (v && v->facc && s->kv_layout != SA_KV_JOINED) {
		piece_part(o, v, (buf % 2 ? g->layers : 0) + buf / 2, o->e[block].j, off, data,
		           len);
	}
	pthread_rwlock_unlock(&o->lk);
}

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
	if (v->facc && __atomic_load_n(&v->fbytes[part], __ATOMIC_SEQ_CST) ==
	                   v->ntok * (size_t)s->o.tp * seg) {
		/* summed as it landed, every byte once: its part's sum without a read-back */
		h.acc = __atomic_load_n(&v->facc[part], __ATOMIC_SEQ_CST);
		h.rows = v->ntok * (size_t)g->kv_heads;
		atomic_fetch_add(&s->n.parts_landed, 1);
	} else {
		size_t hst = sa_v1_hstride(s), rb = mdl_kv_row_bytes(g);
		int hs = g->kv_heads / s->o.tp;

		for (size_t t = 0; t < v->ntok; t++)
			for (int k = 0; k < s->o.tp; k++) {
				const uint8_t *p = sa_v1_seg(s, v->dp, v->blk, value, l, t, k);

				if (!hst)
					mdl_ks_update(&h, p, seg);
				for (int hh = 0; hst && hh < hs; hh++) /* head-major */
					mdl_ks_update(&h, p + (size_t)hh * hst, rb);
			}
	}
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
	if (s->own[r->dp][0]) { /* else (or out of memory) every part is read back */
		v->facc = calloc(4 * (size_t)s->o.geom.layers, sizeof(uint64_t));
		v->fbytes = v->facc ? v->facc + 2 * (size_t)s->o.geom.layers : NULL;
		if (v->facc)
			own_blocks(v, true);
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
		struct sa_kvmap map = {map_seg, v, NULL, sa_v1_hstride(v->s)};

		atomic_fetch_add(&v->s->n.check_rescans, 1);
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
	if (v->facc)
		own_blocks(v, false); /* waits out a piece being summed into facc */
	free(v->facc);
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
