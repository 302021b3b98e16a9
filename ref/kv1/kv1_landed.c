/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_landed: which of a consumer's blocks a producer's WRITEs have filled so far (the engine's
 * landed hook, TCP host memory), so work on a request's KV can start before its transfer ends. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kv1_internal.h"
#include "pd_util.h"

/* A block's word in w->landed: the bytes landed so far, and two flags. The engine's server
 * thread (the landed hook, once per piece of every WRITE) never takes a lock nor waits for a
 * consumer thread: it adds its bytes and wakes the word's sleepers only when it completes a
 * block someone waits for. Issue 33: it used to take the waiters' mutex and broadcast to every
 * waiter on every piece; with 64 streams on 2 busy cores it queued behind dozens of woken
 * waiters on each piece, its socket's receive window closed, and the producer's WRITEs made no
 * progress until MC_TRANSFER_TIMEOUT. */
#define LANDED_WAITED  0x80000000u /* a waiter sleeps (or is about to) on this word */
#define LANDED_KICK    0x40000000u /* flipped by kv1_landed_done: sleepers re-check their end */
#define LANDED_BYTES   0x3fffffffu
#define LANDED_STEP_MS 50 /* a sleeper's bounded step, to see the worker stop */

/* Engine server thread: counts the bytes of [addr, addr+len) per block of the buffer it hit. */
static void on_landed(void *ud, const void *addr, size_t len)
{
	struct kv1_worker *w = ud;
	const uint8_t *a = addr;
	size_t bl = w->o.block_len, N = w->o.num_blocks;

	for (int b = 0; b < w->o.nbufs; b++) {
		size_t off, end;

		if (a < w->bufs[b] || a >= w->bufs[b] + w->buf_bytes)
			continue;
		off = (size_t)(a - w->bufs[b]);
		end = len > w->buf_bytes - off ? w->buf_bytes : off + len;
		for (size_t k = off / bl; k * bl < end; k++) {
			size_t lo = k * bl > off ? k * bl : off,
			       hi = (k + 1) * bl < end ? (k + 1) * bl : end;
			_Atomic uint32_t *c = &w->landed[(size_t)b * N + k];
			uint32_t old;

			/* the piece's user first: a waiter that sees the block landed sees its work
			 */
			if (w->o.on_piece)
				w->o.on_piece(w->o.piece_ud, b, (int64_t)k, lo - k * bl,
				              w->bufs[b] + lo, hi - lo);
			old = atomic_fetch_add(c, (uint32_t)(hi - lo));
			if ((old & LANDED_WAITED) && (old & LANDED_BYTES) < bl &&
			    (old & LANDED_BYTES) + (hi - lo) >= bl)
				pd_futex_wake((uint32_t *)c);
		}
		break;
	}
}

int kv1_landed_init(struct kv1_worker *w)
{
	if (w->gpu_dev >= 0 || w->o.block_len > LANDED_BYTES / 2)
		return 0; /* not tracked: waits end with the transfer */
	w->landed = calloc((size_t)w->o.nbufs * w->o.num_blocks, sizeof(*w->landed));
	if (!w->landed)
		return -ENOMEM;
	te_engine_set_landed(w->te, on_landed, w);
	return 0;
}

void kv1_landed_fini(struct kv1_worker *w)
{
	free(w->landed);
	w->landed = NULL;
}

void kv1_landed_reset(struct kv1_worker *w, const int64_t *ids, size_t n)
{
	size_t N = w->o.num_blocks;

	for (int b = 0; w->landed && b < w->o.nbufs; b++)
		for (size_t i = 0; i < n; i++)
			if (ids[i] >= 0 && (size_t)ids[i] < N)
				atomic_store(&w->landed[(size_t)b * N + (size_t)ids[i]], 0);
}

/* The wait's end once *done is set or the worker stops: 0 for a successful receive. */
static int ended(struct kv1_worker *w, const atomic_int *done, bool *over)
{
	int d = atomic_load(done);

	*over = d || atomic_load(&w->stop);
	return d > 0 ? 0 : -ECANCELED;
}

/* Sleeps on block word c (not landed in full, value v) until a WRITE completes it, a
 * kv1_landed_done flips its kick bit, or the bounded step ends. */
static void sleep_on(struct kv1_worker *w, _Atomic uint32_t *c, uint32_t v, const atomic_int *done)
{
	bool over;

	if (!(v & LANDED_WAITED)) {
		if (!atomic_compare_exchange_strong(c, &v, v | LANDED_WAITED))
			return; /* it moved: look again */
		v |= LANDED_WAITED;
	}
	/* after the flag: kv1_landed_done stores *done before it looks for flags */
	ended(w, done, &over);
	if (over)
		return;
	if (!pd_futex_wait((uint32_t *)c, v, LANDED_STEP_MS * 1000000ull)) {
		uint32_t now = atomic_load(c);

		if ((now & LANDED_BYTES) < w->o.block_len && !((now ^ v) & LANDED_KICK) &&
		    !atomic_load(done))
			atomic_fetch_add(&w->landed_idle_wakes, 1);
	}
}

int kv1_landed_wait(struct kv1_worker *w, int buf, const int64_t *ids, size_t n,
                    const atomic_int *done)
{
	size_t N = w->o.num_blocks;
	bool over;
	int ret;

	if (buf < 0 || buf >= w->o.nbufs)
		return -EINVAL;
	if (!w->landed) { /* untracked: only the end of the transfer says */
		while (!atomic_load(done) && !atomic_load(&w->stop))
			pd_sleep_ms(1);
		return atomic_load(done) > 0 ? 0 : -ECANCELED;
	}
	/* the blocks one by one: a block's count only grows while we wait for it */
	for (size_t i = 0; i < n;) {
		_Atomic uint32_t *c;
		uint32_t v;

		if (ids[i] < 0 || (size_t)ids[i] >= N) { /* never lands: only the end says */
			ret = ended(w, done, &over);
			if (over)
				return ret;
			pd_sleep_ms(1);
			continue;
		}
		c = &w->landed[(size_t)buf * N + (size_t)ids[i]];
		v = atomic_load(c);
		if ((v & LANDED_BYTES) >= w->o.block_len) {
			i++;
			continue;
		}
		ret = ended(w, done, &over);
		if (over)
			return ret;
		sleep_on(w, c, v, done);
	}
	return 0;
}

/* Flips the kick bit of every word a waiter sleeps on, so each re-checks its receive's end
 * (the request's blocks are not known here; a worker has at most a few thousand words). */
void kv1_landed_done(struct kv1_worker *w, atomic_int *done, bool ok)
{
	size_t nw;

	atomic_store(done, ok ? 1 : -1);
	if (!w->landed)
		return;
	nw = (size_t)w->o.nbufs * w->o.num_blocks;
	for (size_t i = 0; i < nw; i++)
		if (atomic_load(&w->landed[i]) & LANDED_WAITED) {
			atomic_fetch_xor(&w->landed[i], LANDED_KICK);
			pd_futex_wake((uint32_t *)&w->landed[i]);
		}
}
