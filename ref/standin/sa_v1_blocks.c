/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_blocks: a V1 request's KV blocks on the workers (taken from the pool as vLLM's scheduler
 * waits for them, and where a rank's rows sit in them) and the local compute both halves of the
 * connector fall back to. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_gpu.h"

/* Where rank k's heads of (layer, token) sit in the request's blocks (sa_kvmap). */
uint8_t *sa_v1_blk_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct sa_v1_blkmap *m = ud;
	int st = sa_pp_stage(m->s, l);

	return sa_v1_seg_g(m->s, m->dp, st ? m->bst[st - 1] : m->blk, m->gl, value, l, t, k);
}

/* Blocks for one rank, waiting while the pool is short as vLLM's scheduler would (up to
 * --kv-block-wait-timeout-ms); the wait is logged at most once a second per process. 0, or
 * -E2BIG (more than the whole pool), -ETIMEDOUT, -ECANCELED, -ENOMEM, with why set. */
int sa_v1_alloc_blocks(struct sa *s, struct sa_req *r, int k, int st, size_t nb, int64_t **out,
                       char *why, size_t wsz)
{
	static _Atomic uint64_t last_log_ns;
	struct kv1_worker *w = sa_pp_worker(s, r->dp, k, st);
	uint64_t t0 = pd_now_ns(), last;
	bool waited = false;
	int ret;

	*out = malloc((nb ? nb : 1) * sizeof(int64_t));
	if (!*out) {
		snprintf(why, wsz, "out of memory for %zu block ids", nb);
		return -ENOMEM;
	}
	ret = kv1_alloc(w, nb, *out);
	if (ret && s->o.kv_block_wait_ms > 0 && nb <= kv1_worker_num_blocks(w)) {
		last = atomic_load(&last_log_ns);
		if (t0 - last >= 1000000000ull &&
		    atomic_compare_exchange_strong(&last_log_ns, &last, t0))
			pd_info(
			    "request %s: waiting for %zu free KV blocks on dp %d rank %d (pool of "
			    "%zu is busy; up to %d ms)",
			    r->id, nb, r->dp, k, kv1_worker_num_blocks(w), s->o.kv_block_wait_ms);
		ret = kv1_alloc_wait(w, nb, *out, t0 + (uint64_t)s->o.kv_block_wait_ms * 1000000ull,
		                     &waited);
	}
	if (!ret)
		return 0;
	free(*out);
	*out = NULL;
	if (ret == -ETIMEDOUT)
		snprintf(why, wsz,
		         "no free KV blocks on dp %d rank %d within %d ms (%zu needed; raise "
		         "--num-gpu-blocks-override or --kv-block-wait-timeout-ms)",
		         r->dp, k, s->o.kv_block_wait_ms, nb);
	else if (ret == -ECANCELED)
		snprintf(why, wsz, "shutting down while waiting for KV blocks on dp %d rank %d",
		         r->dp, k);
	else
		snprintf(why, wsz,
		         "no free KV blocks on dp %d rank %d (%zu needed; raise "
		         "--num-gpu-blocks-override)",
		         r->dp, k, nb);
	return ret == -E2BIG ? -ENOSPC : ret;
}

/* A local prefill: the fake model's KV is only hashed (nothing keeps it), then paced. */
int sa_v1_local_compute(struct sa *s, struct sa_req *r, bool recompute)
{
	uint64_t t0 = pd_now_ns(), ts = t0;
	size_t *w0 = NULL;
	struct sa_kvmap win = {NULL, NULL, NULL, 0}; /* hybrid: a sliding layer's window only */
	int ret;

	if (r->n1_full) { /* Mamba/GDN decode recomputing: the whole prompt */
		r->ntok = r->n1_full;
		r->n1_full = 0;
	}
	ret = sa_hyb_t0(s, r->ntok, &w0);

	win.t0 = w0;
	if (!ret)
		ret =
		    sa_kv_gen(&s->o.geom, r->tokens, r->ntok, 1, w0 ? &win : NULL, &r->seed, NULL);
	free(w0);

	sa_stage(r, "gen+seed", &ts);
	if (!ret) {
		mdl_pace(t0, s->o.ns_per_token, r->ntok);
		sa_stage(r, "pace", &ts);
		atomic_fetch_add(&s->n.computed, r->ntok);
	}
	if (ret)
		return ret;
	atomic_fetch_add(&s->n.src_local, r->ntok);
	if (recompute) {
		r->recomputed = r->ntok;
		atomic_fetch_add(&s->n.recomputed, r->ntok);
	}
	return 0;
}
