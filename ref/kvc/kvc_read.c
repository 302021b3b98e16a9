/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_read: the receiver's TE READ of one announced (ptr, len), polled with short naps (a READ of
 * a few ms must not end up to a 1 ms nap late, as te_transfer_sync's back-off allows), and
 * cut into chunks submitted as one batch (PDKV_KVC_READ_CHUNK, default 4 MiB: the engine spreads
 * a batch's requests over its lanes; handoff.py's V0 hand-off went from 73 to 78 % of the engine
 * at 16k tokens on a 2-core host and from 78 to 85 % at 32k on a 16-core one, against one
 * request per READ). Same result codes as te_transfer_sync.
 * A READ given up in flight (our deadline, the engine's slice timeout, the pipe stopping) may
 * still land: the engine ends every task eventually (a TCP lane fails its slices when the
 * connection breaks or times out, and at destroy), but until then its worker writes into the
 * buffer. So the buffer goes to a quarantine, registered and out of the pool, and its batch to
 * the engine (te_batch_abandon), which owns that lifecycle: each later READ reaps
 * (te_batch_reap), and the engine releases (quar_release) those whose every task has ended;
 * the pipe's close frees the rest after the engine is gone. At most KVC_QUAR_MAX are held: past
 * that, a READ waits (within its own deadline) for the engine to end one, else it is refused; the
 * pool's caps bound their bytes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvc/kvc_internal.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"

/* Pieces shown as they land (te_batch_set_land): the select's hook as it was when the READ
 * started. off: no more calls (the READ was abandoned or its select has ended); the lock lets
 * kvc_read_land_off wait out a call in progress. shown[k]: bytes of chunk k the hook was shown;
 * a chunk not shown whole is shown by kvc_read_finish once it has landed. Lives as long as
 * the batch (a lane may call into it until every task has ended). */
struct kvc_land {
	pthread_rwlock_t lk;
	bool off;
	kvc_piece_fn fn;
	void *ud;
	int i;
	size_t chunk, len;
	atomic_size_t shown[];
};

#define CHUNK_MIN     (64ull << 10)
#define CHUNK_DEFAULT (4ull << 20)
#define MAX_CHUNKS    8192 /* larger reads get larger chunks */
#define NAP_MIN_NS    2000
#define NAP_MAX_NS    100000
#define QUAR_NAP_NS   1000000 /* waiting for a held READ to end */

/* PDKV_KVC_READ_CHUNK: a size (at least 64 KiB); 0 = one request; unset = CHUNK_DEFAULT */
static size_t chunk_bytes(size_t len)
{
	uint64_t v;
	size_t c;

	pd_env_size("PDKV_KVC_READ_CHUNK", &v); /* default 4M (CHUNK_DEFAULT); bad: warned */
	c = v == 0 ? len : v < CHUNK_MIN ? CHUNK_MIN : (size_t)v;
	if (c < len / MAX_CHUNKS + 1)
		c = len / MAX_CHUNKS + 1;
	return c < len ? c : len;
}

static int timeout_ms_of(const struct kvc_pipe *p, size_t len)
{
	int64_t s, ms;

	if (p->transfer_timeout_ms > 0)
		return p->transfer_timeout_ms;
	pd_env_int("MC_TRANSFER_TIMEOUT", &s); /* 5..86400 s: s * 1000 fits an int */
	ms = s * 1000 + (int64_t)(len / 1000000);
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

static void land_free(struct kvc_land *l)
{
	if (l) {
		pthread_rwlock_destroy(&l->lk);
		free(l);
	}
}

/* A lane's te_land_fn: chunk `task`'s bytes [off, off + len) are in; the blob header (48 bytes,
 * at the start of chunk 0) is left out, as in kvc_piece_fn. */
static void land_cb(void *ud, size_t task, uint64_t off, const void *data, size_t len)
{
	struct kvc_land *l = ud;
	size_t lo = task * l->chunk + (size_t)off, hi = lo + len;
	const uint8_t *d = data;

	if (lo < KVC_BLOB_HDR) {
		d += hi > KVC_BLOB_HDR ? KVC_BLOB_HDR - lo : 0;
		lo = hi > KVC_BLOB_HDR ? KVC_BLOB_HDR : hi;
	}
	pthread_rwlock_rdlock(&l->lk);
	if (!l->off) {
		if (hi > lo)
			l->fn(l->ud, l->i, lo - KVC_BLOB_HDR, d, hi - lo, l->len - KVC_BLOB_HDR);
		atomic_fetch_add(&l->shown[task], len);
	}
	pthread_rwlock_unlock(&l->lk);
}

void kvc_read_land_off(struct kvc_rd *rd)
{
	if (!rd->land)
		return;
	pthread_rwlock_wrlock(&rd->land->lk);
	rd->land->off = true;
	pthread_rwlock_unlock(&rd->land->lk);
}

/* quar_mu held: takes q off the pipe's quarantine list. */
static void quar_unlink_locked(struct kvc_pipe *p, struct kvc_quar *q)
{
	for (struct kvc_quar **pp = &p->quar; *pp; pp = &(*pp)->link)
		if (*pp == q) {
			*pp = q->link;
			p->quar_n--;
			p->quar_bytes -= q->len;
			return;
		}
}

/* te_release_fn of an abandoned READ: every task of its batch has ended, so its buffer goes
 * back to the pool. engine_gone: the pipe's close frees it (kvc_read_quar_drop), after the
 * pool is detached from the engine. */
static void quar_release(void *ud, bool engine_gone)
{
	struct kvc_quar *q = ud;
	struct kvc_pipe *p = q->p;
	size_t left;

	if (engine_gone)
		return;
	pthread_mutex_lock(&p->quar_mu);
	quar_unlink_locked(p, q);
	left = p->quar_n;
	pthread_mutex_unlock(&p->quar_mu);
	pd_info("kvc: the abandoned READ of %zu bytes from %s has ended; its buffer is "
	        "back in the pool (%zu still held)",
	        q->len, p->v0.remote_url, left);
	kvc_pool_free(p->pool, q->buf);
	land_free(q->land);
	free(q);
}

void kvc_read_reap(struct kvc_pipe *p)
{
	te_batch_reap(p->eng);
}

void kvc_read_quar_drop(struct kvc_pipe *p)
{
	pthread_mutex_lock(&p->quar_mu);
	while (p->quar) {
		struct kvc_quar *q = p->quar;

		p->quar = q->link;
		kvc_pool_free(p->pool, q->buf);
		land_free(q->land);
		free(q);
	}
	p->quar_n = p->quar_bytes = 0;
	pthread_mutex_unlock(&p->quar_mu);
}

size_t kvc_read_quar_count(struct kvc_pipe *p)
{
	return pd_locked_size(&p->quar_mu, &p->quar_n);
}

/* Reaps, then while KVC_QUAR_MAX are held waits (until end, or the stop) for the engine to
 * end one. False: still full. */
static bool quar_room(struct kvc_pipe *p, uint64_t end)
{
	kvc_read_reap(p);
	while (kvc_read_quar_count(p) >= KVC_QUAR_MAX) {
		if (pd_now_ns() > end || atomic_load(&p->stop))
			return false;
		nanosleep(&(struct timespec){0, QUAR_NAP_NS}, NULL);
		kvc_read_reap(p);
	}
	return true;
}

/* The READ into dst is given up with tasks [next, n) of batch possibly still writing. */
static void quarantine(struct kvc_pipe *p, uint64_t batch, void *dst, size_t len,
                       struct kvc_land *land)
{
	struct kvc_quar *q = malloc(sizeof(*q));
	size_t n, bytes;

	atomic_fetch_add(&p->reads_abandoned, 1);
	if (q) {
		*q = (struct kvc_quar){p, dst, len, land, NULL};
		pthread_mutex_lock(&p->quar_mu);
		q->link = p->quar;
		p->quar = q;
		n = ++p->quar_n;
		bytes = p->quar_bytes += len;
		pthread_mutex_unlock(&p->quar_mu);
		if (!te_batch_abandon(p->eng, batch, quar_release, q)) {
			pd_warn(
			    "kvc: READ of %zu bytes from %s abandoned in flight: its buffer stays "
			    "out of the pool until the engine ends the transfer (%zu READs, %zu "
			    "bytes held)",
			    len, p->v0.remote_url, n, bytes);
			return;
		}
		pthread_mutex_lock(&p->quar_mu);
		quar_unlink_locked(p, q);
		pthread_mutex_unlock(&p->quar_mu);
		free(q);
	}
	/* cannot track it: never reuse the buffer */
	pd_err("kvc: READ from %s abandoned in flight: %zu bytes leaked (out of memory, or the "
	       "engine does not know its batch)",
	       p->v0.remote_url, len);
}

static int submit(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len, size_t chunk, size_t n,
                  struct kvc_land *land, uint64_t *batch)
{
	struct te_request *r;
	uint64_t seg;
	int rc = te_open_segment(p->eng, p->v0.remote_url, &seg);

	if (rc)
		return rc;
	r = malloc(n * sizeof(*r));
	if (!r)
		return TE_ERR_MEMORY;
	for (size_t i = 0; i < n; i++) {
		size_t off = i * chunk;

		r[i] = (struct te_request){TE_READ, (uint8_t *)dst + off, seg, ptr + off,
		                           len - off < chunk ? len - off : chunk};
	}
	rc = te_batch_alloc(p->eng, n, batch);
	if (rc) {
		free(r);
		return rc;
	}
	if (land)
		rc = te_batch_set_land(p->eng, *batch, land_cb, land);
	if (!rc)
		rc = te_batch_submit(p->eng, *batch, r, n);
	free(r);
	if (rc)
		te_batch_free(p->eng, *batch); /* nothing of it was started */
	return rc;
}

/* PDKV_KVC_LAND_PIECES: 1 (default) the lanes show the pieces as they land; 0 the select's
 * thread shows each chunk once it has landed (read per READ, as PDKV_KVC_READ_CHUNK is) */
static bool land_pieces(void)
{
	bool on;

	pd_env_bool("PDKV_KVC_LAND_PIECES", &on); /* default 1; bad: warned, 1 */
	return on;
}

/* The landing context of a READ of n chunks shown to the select's hook as tensor i, or NULL
 * (no hook, or out of memory: kvc_read_finish then shows every chunk). */
static struct kvc_land *land_new(struct kvc_pipe *p, int i, size_t chunk, size_t len, size_t n)
{
	struct kvc_land *l;

	if (i < 0 || !p->piece_fn || !land_pieces() ||
	    !(l = calloc(1, sizeof(*l) + n * sizeof(l->shown[0]))))
		return NULL;
	pthread_rwlock_init(&l->lk, NULL);
	l->fn = p->piece_fn;
	l->ud = p->piece_ud;
	l->i = i;
	l->chunk = chunk;
	l->len = len;
	for (size_t k = 0; k < n; k++)
		atomic_init(&l->shown[k], 0);
	return l;
}

void kvc_read_land_free(struct kvc_rd *rd)
{
	land_free(rd->land);
	rd->land = NULL;
}

int kvc_read_start(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len, int piece_i,
                   struct kvc_rd *rd)
{
	int rc;

	*rd = (struct kvc_rd){.dst = dst, .len = len};
	if (len == 0)
		return 0;
	rd->chunk = chunk_bytes(len);
	rd->n = (len + rd->chunk - 1) / rd->chunk;
	rd->end = pd_now_ns() + (uint64_t)timeout_ms_of(p, len) * 1000000ull;
	if (!quar_room(p, rd->end)) {
		atomic_fetch_add(&p->reads_refused, 1);
		pd_warn("kvc: READ of %zu bytes from %s refused: %d abandoned READs from it are "
		        "still in flight",
		        len, p->v0.remote_url, KVC_QUAR_MAX);
		return TE_ERR_TOO_MANY_REQUESTS;
	}
	rd->land = land_new(p, piece_i, rd->chunk, len, rd->n);
	rc = submit(p, dst, ptr, len, rd->chunk, rd->n, rd->land, &rd->batch);
	if (rc) {
		kvc_read_land_free(rd);
		return rc;
	}
	rd->started = true;
	return 0;
}

void kvc_read_rearm(struct kvc_pipe *p, struct kvc_rd *rd)
{
	uint64_t end = pd_now_ns() + (uint64_t)timeout_ms_of(p, rd->len) * 1000000ull;

	if (end > rd->end)
		rd->end = end;
}

void kvc_read_abandon(struct kvc_pipe *p, struct kvc_rd *rd)
{
	if (!rd->started)
		return;
	kvc_read_land_off(rd);
	quarantine(p, rd->batch, rd->dst, rd->len, rd->land);
	rd->land = NULL;
	rd->started = false;
}

/* Chunk k of rd has landed: its part of the tensor's data to the select's piece hook, if any,
 * unless a lane showed it all as it landed. One shown in part is shown whole again: a hook that
 * counts the bytes it saw can tell. */
static void show_piece(struct kvc_pipe *p, const struct kvc_rd *rd, size_t k)
{
	size_t lo = k * rd->chunk, hi = lo + rd->chunk < rd->len ? lo + rd->chunk : rd->len;

	if (rd->land && atomic_load(&rd->land->shown[k]) == hi - lo)
		return;
	if (!p->piece_fn || rd->len <= KVC_BLOB_HDR || hi <= KVC_BLOB_HDR)
		return;
	if (lo < KVC_BLOB_HDR)
		lo = KVC_BLOB_HDR;
	p->piece_fn(p->piece_ud, p->piece_i, lo - KVC_BLOB_HDR, (const uint8_t *)rd->dst + lo,
	            hi - lo, rd->len - KVC_BLOB_HDR);
}

int kvc_read_finish(struct kvc_pipe *p, struct kvc_rd *rd, bool *abandoned)
{
	long nap = NAP_MIN_NS;
	bool failed = false;
	int rc = 0;

	*abandoned = false;
	if (!rd->started)
		return 0; /* len 0 */
	pd_fine_naps();
	/* chunks finish about in order: wait on the oldest unfinished one */
	while (rd->next < rd->n) {
		struct te_task_status st = {0, 0};

		rc = te_batch_status(p->eng, rd->batch, rd->next, &st);
		if (rc)
			break;
		if (st.status != TE_WAITING && st.status != TE_PENDING && st.status != TE_TIMEOUT) {
			failed |= st.status != TE_COMPLETED;
			if (st.status == TE_COMPLETED)
				show_piece(p, rd, rd->next);
			rd->next++;
			nap = NAP_MIN_NS;
			continue;
		}
		if (st.status == TE_TIMEOUT || pd_now_ns() > rd->end || atomic_load(&p->stop)) {
			pd_err("kvc: READ of %zu bytes from %s %s (%zu of %zu chunks done)",
			       rd->len, p->v0.remote_url,
			       atomic_load(&p->stop)     ? "stopped"
			       : st.status == TE_TIMEOUT ? "hit the engine's slice timeout"
			                                 : "timed out",
			       rd->next, rd->n);
			rc = TE_ERR_TIMEOUT;
			break;
		}
		nanosleep(&(struct timespec){0, nap}, NULL);
		if (nap < NAP_MAX_NS)
			nap *= 2;
	}
	if (rd->next < rd->n || te_batch_free(p->eng, rd->batch)) {
		kvc_read_abandon(p, rd);
		*abandoned = true;
		return rc ? rc : TE_ERR_TIMEOUT;
	}
	rd->started = false;
	kvc_read_land_free(rd); /* every task has ended: no lane calls it any more */
	if (rc)
		return rc;
	return failed ? TE_ERR_ENDPOINT : 0;
}

int kvc_read(struct kvc_pipe *p, void *dst, uint64_t ptr, size_t len, bool *abandoned)
{
	struct kvc_rd rd;
	int rc = kvc_read_start(p, dst, ptr, len, p->piece_fn ? p->piece_i : -1, &rd);

	*abandoned = false;
	return rc ? rc : kvc_read_finish(p, &rd, abandoned);
}
