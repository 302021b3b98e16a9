/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_landed: which of a consumer's blocks a producer's WRITEs have filled so far (the engine's
 * landed hook, TCP host memory), so work on a request's KV can start before its transfer ends. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "kv1_internal.h"
#include "pd_util.h"

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

			/* the piece's user first: a waiter that sees the block landed sees its work
			 */
			if (w->o.on_piece)
				w->o.on_piece(w->o.piece_ud, b, (int64_t)k, lo - k * bl,
				              w->bufs[b] + lo, hi - lo);
			atomic_fetch_add(&w->landed[(size_t)b * N + k], (uint32_t)(hi - lo));
		}
		break;
	}
	if (atomic_load(&w->lwaiters)) {
		pthread_mutex_lock(&w->lmu);
		pthread_cond_broadcast(&w->lcv);
		pthread_mutex_unlock(&w->lmu);
	}
}

int kv1_landed_init(struct kv1_worker *w)
{
	if (w->gpu_dev >= 0 || w->o.block_len > UINT32_MAX / 2)
		return 0; /* not tracked: waits end with the transfer */
	w->landed = calloc((size_t)w->o.nbufs * w->o.num_blocks, sizeof(*w->landed));
	if (!w->landed)
		return -ENOMEM;
	pthread_mutex_init(&w->lmu, NULL);
	pthread_cond_init(&w->lcv, NULL);
	te_engine_set_landed(w->te, on_landed, w);
	return 0;
}

void kv1_landed_fini(struct kv1_worker *w)
{
	if (!w->landed)
		return;
	free(w->landed);
	w->landed = NULL;
	pthread_mutex_destroy(&w->lmu);
	pthread_cond_destroy(&w->lcv);
}

void kv1_landed_reset(struct kv1_worker *w, const int64_t *ids, size_t n)
{
	size_t N = w->o.num_blocks;

	for (int b = 0; w->landed && b < w->o.nbufs; b++)
		for (size_t i = 0; i < n; i++)
			if (ids[i] >= 0 && (size_t)ids[i] < N)
				atomic_store(&w->landed[(size_t)b * N + (size_t)ids[i]], 0);
}

static bool all_landed(struct kv1_worker *w, int buf, const int64_t *ids, size_t n)
{
	size_t N = w->o.num_blocks;

	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || (size_t)ids[i] >= N ||
		    atomic_load(&w->landed[(size_t)buf * N + (size_t)ids[i]]) < w->o.block_len)
			return false;
	return true;
}

int kv1_landed_wait(struct kv1_worker *w, int buf, const int64_t *ids, size_t n,
                    const atomic_int *done)
{
	int ret = 0;

	if (buf < 0 || buf >= w->o.nbufs)
		return -EINVAL;
	if (!w->landed) { /* untracked: only the end of the transfer says */
		while (!atomic_load(done) && !atomic_load(&w->stop))
			pd_sleep_ms(1);
		return atomic_load(done) > 0 ? 0 : -ECANCELED;
	}
	atomic_fetch_add(&w->lwaiters, 1);
	pthread_mutex_lock(&w->lmu);
	while (!all_landed(w, buf, ids, n)) {
		struct timespec ts;

		if (atomic_load(done) || atomic_load(&w->stop)) {
			ret = atomic_load(done) > 0 ? 0 : -ECANCELED;
			break;
		}
		/* a bounded step: kv1_landed_done's broadcast may fall between check and wait */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5000000;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!pthread_cond_timedwait(&w->lcv, &w->lmu, &ts) && !all_landed(w, buf, ids, n) &&
		    !atomic_load(done))
			atomic_fetch_add(&w->landed_idle_wakes, 1);
	}
	pthread_mutex_unlock(&w->lmu);
	atomic_fetch_sub(&w->lwaiters, 1);
	return ret;
}

void kv1_landed_done(struct kv1_worker *w, atomic_int *done, bool ok)
{
	atomic_store(done, ok ? 1 : -1);
	if (!w->landed)
		return;
	pthread_mutex_lock(&w->lmu);
	pthread_cond_broadcast(&w->lcv);
	pthread_mutex_unlock(&w->lmu);
}
