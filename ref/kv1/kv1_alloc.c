/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_alloc: a worker's KV blocks — their addresses, the copy plan between block lists, the FIFO
 * ring of free block ids and the bounded wait for blocks (vLLM's scheduler holds a request while
 * the KV cache is full). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "kv1_internal.h"
#include "pd_log.h"
#include "pd_util.h"

/* ------------------------------------------------------------------ blocks and the copy plan */

uint8_t *kv1_block(struct kv1_worker *w, int buf, int64_t block)
{
	if (buf < 0 || buf >= w->o.nbufs || block < 0 || (size_t)block >= w->o.num_blocks)
		return NULL;
	return w->bufs[buf] + (size_t)block * w->o.block_len;
}

int kv1_plan(const int64_t *local, size_t nl, const int64_t *remote, size_t nr,
             struct kv1_run **runs, size_t *nruns)
{
	struct kv1_run *v;
	size_t k = 0;

	*runs = NULL;
	*nruns = 0;
	if (nl < nr)
		return -ERANGE;
	local += nl - nr; /* P computed more than D asked for: D wants the tail */
	v = calloc(nr ? nr : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		if (k && v[k - 1].local + v[k - 1].n == local[i] &&
		    v[k - 1].remote + v[k - 1].n == remote[i]) {
			v[k - 1].n++;
			continue;
		}
		v[k++] = (struct kv1_run){local[i], remote[i], 1};
	}
	*runs = v;
	*nruns = k;
	return 0;
}

/* ------------------------------------------------------------------ allocator */

static void take_locked(struct kv1_worker *w, size_t n, int64_t *ids)
{
	for (size_t i = 0; i < n; i++) {
		ids[i] = w->freeq[w->fq_head];
		w->fq_head = (w->fq_head + 1) % w->o.num_blocks;
		w->fq_n--;
	}
}

int kv1_alloc(struct kv1_worker *w, size_t n, int64_t *ids)
{
	pthread_mutex_lock(&w->amu);
	kv1_rhold_reap_locked(w);
	if (n > w->fq_n) {
		pthread_mutex_unlock(&w->amu);
		return -ENOSPC;
	}
	take_locked(w, n, ids);
	pthread_mutex_unlock(&w->amu);
	return 0;
}

/* vLLM's scheduler keeps a request waiting while the KV cache is full rather than failing it:
 * wait on acv (kv1_free signals it) until n blocks are free, the deadline passes or the worker
 * stops. Waiters queue in arrival order (the head goes first), so a large request is not starved
 * by a stream of small ones. */
int kv1_alloc_wait(struct kv1_worker *w, size_t n, int64_t *ids, uint64_t deadline_ns, bool *waited)
{
	struct kv1_awaiter me = {NULL};
	bool logged = false;
	int ret = 0;

	if (waited)
		*waited = false;
	if (n > w->o.num_blocks)
		return -E2BIG;
	pthread_mutex_lock(&w->amu);
	*(w->aq_tail ? &w->aq_tail->next : &w->aq_head) = &me;
	w->aq_tail = &me;
	for (;;) {
		uint64_t now;

		kv1_rhold_reap_locked(w);
		if (w->aq_head == &me && n <= w->fq_n)
			break;
		now = pd_now_ns();

		if (atomic_load(&w->stop)) {
			ret = -ECANCELED;
			break;
		}
		if (now >= deadline_ns) {
			ret = -ETIMEDOUT;
			if (w->rhold_blocks)
				pd_warn(
				    "kv1: no %zu free blocks in time: %zu free, %zu held after "
				    "failed receives while their producers may still write them",
				    n, w->fq_n, w->rhold_blocks);
			break;
		}
		if (!logged && w->rhold_blocks && n > w->fq_n) {
			logged = true;
			pd_warn("kv1: waiting for %zu free blocks: %zu free, %zu held after failed "
			        "receives (they come back as their holds end)",
			        n, w->fq_n, w->rhold_blocks);
		}
		if (waited && !*waited) {
			*waited = true;
			atomic_fetch_add(&w->alloc_waits, 1);
		}
		kv1_cond_wait_until(&w->acv, &w->amu, deadline_ns);
	}
	if (!ret)
		take_locked(w, n, ids);
	/* leave the queue (served or given up): the next waiter may now be the head */
	struct kv1_awaiter *prev = NULL;

	for (struct kv1_awaiter *q = w->aq_head; q; prev = q, q = q->next)
		if (q == &me) {
			*(prev ? &prev->next : &w->aq_head) = me.next;
			if (w->aq_tail == &me)
				w->aq_tail = prev;
			break;
		}
	pthread_cond_broadcast(&w->acv);
	pthread_mutex_unlock(&w->amu);
	return ret;
}

/* Freed blocks go back to the front of the queue, in their order: the next request gets the same
 * (already faulted-in, cache-warm) pages and the same contiguous runs, instead of walking the
 * whole MAP_NORESERVE pool and faulting in fresh pages on every request. A block that an
 * abandoned WRITE may still be reading stays out until that WRITE ends (kv1_write.c), one a
 * failed receive's producer may still write until its hold ends (kv1_rhold.c). */
void kv1_free(struct kv1_worker *w, const int64_t *ids, size_t n)
{
	size_t N = w->o.num_blocks;

	pthread_mutex_lock(&w->amu);
	for (size_t i = n; i-- > 0 && w->fq_n < N;) {
		if (kv1_hold_keep_locked(w, ids[i]) || kv1_rhold_keep_locked(w, ids[i]))
			continue;
		w->fq_head = (w->fq_head + N - 1) % N;
		w->freeq[w->fq_head] = ids[i];
		w->fq_n++;
	}
	kv1_rhold_reap_locked(w);
	pthread_cond_broadcast(&w->acv);
	pthread_mutex_unlock(&w->amu);
}
