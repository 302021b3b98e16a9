/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_rhold: the consumer's destination blocks after a receive that did not end cleanly.
 *
 * The producer pushes: once the handshake is sent, its engine may WRITE into the decode's blocks
 * until it has ended or given up on that WRITE, and the decode has no batch to watch. A receive
 * that times out, fails or is answered with an error while a WRITE may be in flight therefore
 * holds its blocks: kv1_free keeps a held block out of the free ring, and the block joins it
 * when the hold ends. A hold ends at its deadline, or sooner for a block whose every buffer has
 * had all its bytes land (TCP host memory, kv1_landed.c: the counts are reset before the
 * handshake; a TCP WRITE lands each byte once and is never resent, so nothing more of that
 * transfer can land in it). The deadline (PDKV_KV1_RECV_HOLD_S, else computed) bounds the
 * producer's side: its WRITE's own timeout (MC_TRANSFER_TIMEOUT, 30 s, plus a ns per byte), the
 * TCP lane's socket timeout (30 s) once it gave up, and, when no answer came, its wait for its
 * own prefill before it writes (abort_timeout_s). Receives that never sent the handshake, or
 * that were answered with an error P gives before writing, hold nothing. At most max blocks are
 * held (PDKV_KV1_RECV_HOLD_MAX_BLOCKS, half the pool by default): past that a new receive waits
 * for room until its receive timeout, then is refused. Holds end lazily, on the allocation and
 * free paths (amu held); destroy drops them after the engine is gone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv1_internal.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

#define KV1_RHOLD_LANE_S 30 /* the TCP lane's socket timeout (te_net_set_timeouts_ms) */

struct kv1_rhold {
	struct kv1_rhold *link;
	int64_t *ids;
	size_t n, left; /* blocks; those still held */
	uint64_t until;
	char peer[300];
};

/* An ERR row of the pd_env table: 1 set (*v), 0 unset, -1 bad (err says why). */
static int env_i64(const char *name, int64_t *v, char *err, size_t errsz)
{
	int rc = pd_env_int(name, v);

	if (rc < 0)
		kv1_set_err(err, errsz, "%s", pd_env_error());
	return rc;
}

int kv1_rhold_init(struct kv1_worker *w, char *err, size_t errsz)
{
	int64_t v = 0;
	int r;

	if (w->o.recv_hold_s < 0 || w->o.recv_hold_s > 86400) {
		kv1_set_err(err, errsz, "recv_hold_s %d: expected 0 (default) or 1..86400",
		            w->o.recv_hold_s);
		return -1;
	}
	w->rhold_s = (uint64_t)w->o.recv_hold_s;
	r = env_i64("PDKV_KV1_RECV_HOLD_S", &v, err, errsz);
	if (r < 0)
		return -1;
	if (r > 0 && !w->rhold_s)
		w->rhold_s = (uint64_t)v;
	w->rhold_max = w->o.num_blocks / 2 ? w->o.num_blocks / 2 : 1;
	r = env_i64("PDKV_KV1_RECV_HOLD_MAX_BLOCKS", &v, err, errsz);
	if (r < 0)
		return -1;
	if (r > 0 && v > (int64_t)w->o.num_blocks) {
		kv1_set_err(err, errsz,
		            "PDKV_KV1_RECV_HOLD_MAX_BLOCKS=%lld: expected 1..%zu (the KV "
		            "cache's blocks)",
		            (long long)v, (size_t)w->o.num_blocks);
		return -1;
	}
	if (r > 0)
		w->rhold_max = (size_t)v;
	w->rhold_on = calloc(w->o.num_blocks, 1);
	w->rhold_freed = calloc(w->o.num_blocks, 1);
	if (!w->rhold_on || !w->rhold_freed) {
		kv1_set_err(err, errsz, "out of memory for the receive-hold table");
		return -1;
	}
	return 0;
}

void kv1_rhold_fini(struct kv1_worker *w)
{
	while (w->rholds) {
		struct kv1_rhold *h = w->rholds;

		w->rholds = h->link;
		free(h->ids);
		free(h);
	}
	w->rhold_blocks = 0;
	free(w->rhold_on);
	free(w->rhold_freed);
	w->rhold_on = w->rhold_freed = NULL;
}

bool kv1_rhold_keep_locked(struct kv1_worker *w, int64_t id)
{
	if (!w->rhold_on || id < 0 || (size_t)id >= w->o.num_blocks || !w->rhold_on[id])
		return false;
	w->rhold_freed[id] = 1;
	return true;
}

static bool block_landed(struct kv1_worker *w, int64_t id)
{
	size_t N = w->o.num_blocks;

	if (!w->landed)
		return false;
	for (int b = 0; b < w->o.nbufs; b++)
		if (atomic_load(&w->landed[(size_t)b * N + (size_t)id]) < w->o.block_len)
			return false;
	return true;
}

void kv1_rhold_reap_locked(struct kv1_worker *w)
{
	uint64_t now;
	size_t N = w->o.num_blocks;
	bool any = false;

	if (!w->rholds)
		return;
	now = pd_now_ns();
	for (struct kv1_rhold **pp = &w->rholds; *pp;) {
		struct kv1_rhold *h = *pp;
		size_t landed = 0;

		for (size_t i = 0; i < h->n; i++) {
			int64_t id = h->ids[i];

			if (id < 0 || !w->rhold_on[id])
				continue;
			if (now < h->until && !block_landed(w, id))
				continue;
			landed += now < h->until;
			w->rhold_on[id] = 0;
			h->left--;
			w->rhold_blocks--;
			any = true;
			if (w->rhold_freed[id] && w->fq_n < N) {
				w->fq_head = (w->fq_head + N - 1) % N;
				w->freeq[w->fq_head] = id;
				w->fq_n++;
			}
			w->rhold_freed[id] = 0;
		}
		if (landed)
			pd_info("kv1: %zu block(s) held after the failed receive from %s landed in "
			        "full: released",
			        landed, h->peer);
		if (h->left) {
			pp = &h->link;
			continue;
		}
		if (now >= h->until)
			pd_info("kv1: hold on the blocks of the failed receive from %s ended",
			        h->peer);
		*pp = h->link;
		free(h->ids);
		free(h);
	}
	if (any)
		pthread_cond_broadcast(&w->acv);
}

int kv1_rhold_room(struct kv1_worker *w, const char *peer, uint64_t deadline_ns, char *err,
                   size_t errsz)
{
	size_t held;

	pthread_mutex_lock(&w->amu);
	for (;;) {
		kv1_rhold_reap_locked(w);
		held = w->rhold_blocks;
		if (held < w->rhold_max || atomic_load(&w->stop) || pd_now_ns() >= deadline_ns)
			break;
		kv1_cond_wait_until(&w->acv, &w->amu, deadline_ns);
	}
	pthread_mutex_unlock(&w->amu);
	if (held < w->rhold_max)
		return 0;
	atomic_fetch_add(&w->recvs_refused, 1);
	kv1_set_err(err, errsz,
	            "kv1: receive from %s refused: %zu blocks are held after failed receives "
	            "(PDKV_KV1_RECV_HOLD_MAX_BLOCKS %zu) while their producers may still write "
	            "them",
	            peer, held, w->rhold_max);
	pd_warn("%s", err);
	return -EBUSY;
}

/* Seconds P may still write after the receive gave up: see the file's comment. */
static uint64_t hold_s(struct kv1_worker *w, size_t n, bool answered)
{
	uint64_t bytes = (uint64_t)n * w->o.block_len * (uint64_t)w->o.nbufs;
	int64_t s;

	if (w->rhold_s)
		return w->rhold_s;
	pd_env_int("MC_TRANSFER_TIMEOUT", &s);
	s += KV1_RHOLD_LANE_S + (int64_t)(bytes / 1000000000ull) + 1;
	if (!answered && w->o.abort_timeout_s > 0)
		s += w->o.abort_timeout_s;
	return (uint64_t)s;
}

void kv1_rhold_add(struct kv1_worker *w, const int64_t *ids, size_t n, const char *peer,
                   const char *why, bool answered)
{
	struct kv1_rhold *h = calloc(1, sizeof(*h));
	uint64_t s = hold_s(w, n, answered);
	size_t N = w->o.num_blocks;

	if (h)
		h->ids = malloc((n ? n : 1) * sizeof(*h->ids));
	if (!h || !h->ids) {
		free(h);
		pd_err("kv1: out of memory holding the blocks of the failed receive from %s", peer);
		return;
	}
	snprintf(h->peer, sizeof(h->peer), "%s", peer);
	h->until = pd_now_ns() + s * 1000000000ull;
	pthread_mutex_lock(&w->amu);
	for (size_t i = 0; i < n; i++) {
		int64_t id = ids[i];

		h->ids[i] = -1;
		if (id < 0 || (size_t)id >= N || w->rhold_on[id])
			continue;
		w->rhold_on[id] = 1;
		w->rhold_freed[id] = 0;
		h->ids[h->n++] = id;
	}
	h->left = h->n;
	w->rhold_blocks += h->n;
	atomic_fetch_add(&w->recv_holds, 1);
	pd_warn("kv1: receive from %s ended without its KV (%s): holding its %zu block(s) out of "
	        "the free list for up to %llu s while the producer may still write them (%zu "
	        "held)",
	        peer, why, h->n, (unsigned long long)s, w->rhold_blocks);
	if (h->n) {
		h->link = w->rholds;
		w->rholds = h;
	} else {
		free(h->ids);
		free(h);
	}
	pthread_mutex_unlock(&w->amu);
}

size_t kv1_rhold_count(struct kv1_worker *w)
{
	size_t n;

	pthread_mutex_lock(&w->amu);
	kv1_rhold_reap_locked(w);
	n = w->rhold_blocks;
	pthread_mutex_unlock(&w->amu);
	return n;
}
