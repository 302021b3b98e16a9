/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_write: the producer's engine WRITEs (one batch per handshake, given up as vLLM's
 * batch_transfer_sync_write gives up) and the WRITEs held after being given up in flight.
 *
 * A WRITE given up in flight (its deadline, the engine's slice timeout, the worker stopping)
 * may still be running: the engine's lanes may still read its source blocks and send them to
 * the decode, so those blocks must not go to another request yet. The batch is kept with its
 * runs, every block it reads carries a hold count, and a block its owner frees meanwhile
 * (kv1_free) joins the free ring only when the last held WRITE reading it has ended. The engine
 * owns that lifecycle (te_batch_abandon): it ends every task eventually (a TCP lane fails its
 * slices when the connection breaks or its socket times out, and at engine destroy), and the
 * ROUTER thread and every new WRITE reap (te_batch_reap), which calls held_release for each
 * batch whose tasks have all ended. At most max_held are kept before new WRITEs wait for room
 * (WRITEs already in flight may still add theirs, so up to max_held + KV1_MAX_HANDLERS); the
 * engine's destroy releases the rest once its lanes are gone. */
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv1_internal.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

/* ------------------------------------------------------------------ held WRITEs */

int kv1_hold_init(struct kv1_worker *w, char *err, size_t errsz)
{
	int64_t v;
	int rc;

	w->max_held = KV1_MAX_HELD;
	pd_env_bool("PDKV_KV1_PHASES", &w->write_phases);
	rc = pd_env_int("PDKV_KV1_MAX_HELD_WRITES", &v); /* 1..4096, a bad value refuses */
	if (rc < 0) {
		kv1_set_err(err, errsz, "%s", pd_env_error());
		return -1;
	}
	if (rc > 0)
		w->max_held = (size_t)v;
	w->hold_refs = calloc(w->o.num_blocks, sizeof(*w->hold_refs));
	w->hold_freed = calloc(w->o.num_blocks, sizeof(*w->hold_freed));
	if (!w->hold_refs || !w->hold_freed) {
		kv1_set_err(err, errsz, "out of memory for the held-block table");
		return -1;
	}
	return 0;
}

static void held_free(struct kv1_held *h)
{
	free(h->runs);
	free(h);
}

void kv1_hold_fini(struct kv1_worker *w)
{
	/* after te_engine_destroy, which released every held WRITE (held_release) */
	free(w->hold_refs);
	free(w->hold_freed);
	w->hold_refs = NULL;
	w->hold_freed = NULL;
}

bool kv1_hold_keep_locked(struct kv1_worker *w, int64_t id)
{
	if (!w->hold_refs || id < 0 || (size_t)id >= w->o.num_blocks || !w->hold_refs[id])
		return false;
	w->hold_freed[id] = 1;
	return true;
}

/* Adds d (+1 / -1) to the hold count of every block of h's runs; blocks whose last hold ends
 * and that were freed meanwhile go back to the front of the free ring. */
static void hold_blocks(struct kv1_worker *w, const struct kv1_held *h, int d)
{
	size_t N = w->o.num_blocks;

	pthread_mutex_lock(&w->amu);
	for (size_t i = 0; i < h->nruns; i++)
		for (int64_t b = h->runs[i].local; b < h->runs[i].local + h->runs[i].n; b++) {
			if (b < 0 || (size_t)b >= N)
				continue;
			if (d > 0) {
				w->hold_refs[b]++;
				continue;
			}
			if (!w->hold_refs[b] || --w->hold_refs[b] || !w->hold_freed[b])
				continue;
			w->hold_freed[b] = 0;
			if (w->fq_n < N) {
				w->fq_head = (w->fq_head + N - 1) % N;
				w->freeq[w->fq_head] = b;
				w->fq_n++;
			}
		}
	if (d < 0)
		pthread_cond_broadcast(&w->acv);
	pthread_mutex_unlock(&w->amu);
}

/* te_release_fn of a held WRITE: the engine has ended every task of its batch (or is gone). */
static void held_release(void *ud, bool engine_gone)
{
	struct kv1_held *h = ud;
	struct kv1_worker *w = h->w;
	size_t left;

	pthread_mutex_lock(&w->hmu);
	left = --w->nheld;
	pthread_cond_broadcast(&w->hcv);
	pthread_mutex_unlock(&w->hmu);
	if (!engine_gone) {
		pd_info("kv1: the abandoned WRITE of %llu bytes to %s has ended; its blocks are "
		        "free again (%zu WRITEs still held)",
		        (unsigned long long)h->bytes, h->peer, left);
		hold_blocks(w, h, -1);
	}
	held_free(h);
}

void kv1_hold_reap(struct kv1_worker *w)
{
	te_batch_reap(w->te);
}

size_t kv1_hold_count(struct kv1_worker *w)
{
	return pd_locked_size(&w->hmu, &w->nheld);
}

int kv1_hold_room(struct kv1_worker *w, const char *peer, uint64_t deadline_ns)
{
	size_t n;

	kv1_hold_reap(w);
	pthread_mutex_lock(&w->hmu);
	while ((n = w->nheld) >= w->max_held && !atomic_load(&w->stop) &&
	       pd_now_ns() < deadline_ns) {
		kv1_cond_wait_until(&w->hcv, &w->hmu, deadline_ns);
		pthread_mutex_unlock(&w->hmu);
		kv1_hold_reap(w); /* the engine does not signal: look again on every wake-up */
		pthread_mutex_lock(&w->hmu);
	}
	pthread_mutex_unlock(&w->hmu);
	if (n < w->max_held)
		return 0;
	atomic_fetch_add(&w->writes_refused, 1);
	pd_warn("kv1: WRITE to %s refused: %zu abandoned WRITEs are still in flight (cap %zu, "
	        "PDKV_KV1_MAX_HELD_WRITES)",
	        peer, n, w->max_held);
	return TE_ERR_TOO_MANY_REQUESTS;
}

void kv1_hold_add(struct kv1_worker *w, uint64_t batch, size_t n, size_t next,
                  const struct kv1_run *runs, size_t nruns, const char *peer, uint64_t bytes,
                  const char *why)
{
	struct kv1_held *h = calloc(1, sizeof(*h));
	struct kv1_run *cp = malloc((nruns ? nruns : 1) * sizeof(*cp));
	size_t held;

	atomic_fetch_add(&w->writes_abandoned, 1);
	if (h && cp) {
		memcpy(cp, runs, nruns * sizeof(*runs));
		*h = (struct kv1_held){w, cp, nruns, bytes, ""};
		snprintf(h->peer, sizeof(h->peer), "%s", peer);
		hold_blocks(w, h, +1);
		pthread_mutex_lock(&w->hmu);
		held = ++w->nheld;
		pthread_mutex_unlock(&w->hmu);
		if (!te_batch_abandon(w->te, batch, held_release, h))
			goto held; /* h is the engine's to release now */
		pthread_mutex_lock(&w->hmu);
		w->nheld--; /* its holds stay: never dropped */
		pthread_mutex_unlock(&w->hmu);
	} else {
		pthread_mutex_lock(&w->amu);
		for (size_t i = 0; i < nruns; i++)
			for (int64_t b = runs[i].local; b < runs[i].local + runs[i].n; b++)
				if (b >= 0 && (size_t)b < w->o.num_blocks)
					w->hold_refs[b]++; /* never dropped */
		pthread_mutex_unlock(&w->amu);
	}
	/* cannot track it: never let its blocks go */
	pd_err("kv1: WRITE of %llu bytes to %s abandoned in flight (%s): its blocks are leaked "
	       "(out of memory, or the engine does not know its batch)",
	       (unsigned long long)bytes, peer, why);
	free(cp);
	free(h);
	return;
held:
	pd_warn("kv1: WRITE of %llu bytes to %s abandoned in flight (%s, %zu of %zu requests "
	        "done): its blocks stay out of the free list until the engine ends it (%zu "
	        "WRITEs held)",
	        (unsigned long long)bytes, peer, why, next, n, held);
}

/* ------------------------------------------------------------------ engine writes */

/* vLLM's batch_transfer_sync_write gives up after MC_TRANSFER_TIMEOUT seconds (30; at least 5,
 * as te_transfer_sync reads it) plus a nanosecond per byte. */
static uint64_t write_deadline_ns(uint64_t t0, uint64_t bytes)
{
	int64_t s;

	pd_env_int("MC_TRANSFER_TIMEOUT", &s);
	return t0 + (uint64_t)s * 1000000000ull + bytes;
}

/* One WRITE's moments (pd_now_ns), for the PDKV_KV1_PHASES=1 log line. */
struct wphases {
	uint64_t t0, seg, room, alloc, submit, first, done, freed, napped;
	unsigned polls;
};

/* Waits for the batch to end: the engine wakes this thread when its last task ends
 * (te_batch_wait), in steps of at most 100 ms to see the worker stop. Before, the thread
 * polled with naps paced by the last WRITE's rate (issue 33: a nap sized for one path put the
 * first look after the end on another; on a 2-core host the wake-ups took CPU from the
 * transfer). Gives up at end, on the engine's slice timeout (MC_SLICE_TIMEOUT: a task reported
 * TE_TIMEOUT) or when the worker stops, with *next the first task not seen finished and *why
 * set; the caller then holds the batch (kv1_hold_add). */
static int wait_batch(struct kv1_worker *w, uint64_t batch, size_t n, uint64_t end, size_t *next,
                      const char **why, struct wphases *ph)
{
	unsigned stalls = 0;
	int ret = 0;

	*next = 0;
	*why = NULL;
	for (size_t i = 0; i < n; *next = i) {
		struct te_task_status st;
		uint64_t now, t;
		int e = te_batch_status(w->te, batch, i, &st);

		if (e) {
			*why = te_strerror(e);
			return e;
		}
		if (st.status == TE_COMPLETED || st.status == TE_FAILED) {
			if (st.status == TE_FAILED)
				ret = TE_ERR_ENDPOINT;
			if (!i)
				ph->first = pd_now_ns();
			i++;
			stalls = 0;
			continue;
		}
		now = pd_now_ns();
		*why = atomic_load(&w->stop)     ? "the worker is stopping"
		       : st.status == TE_TIMEOUT ? "the engine's slice timeout (MC_SLICE_TIMEOUT)"
		       : now > end               ? "timed out (MC_TRANSFER_TIMEOUT)"
		                                 : NULL;
		if (*why)
			return TE_ERR_TIMEOUT;
		t = end - now < 100000000ull ? end - now : 100000000ull;
		ph->polls++;
		e = te_batch_wait(w->te, batch, 0, t / 1000 + 1);
		ph->napped += pd_now_ns() - now;
		/* a task counted ended shows its final status a few instructions later */
		if (e == 0 && ++stalls > 1)
			sched_yield();
		else if (e && e != TE_ERR_TIMEOUT)
			pd_sleep_ms(1);
	}
	ph->done = pd_now_ns();
	return ret;
}

/* Submits one batch and waits for it; a batch given up in flight (or that cannot be freed) is
 * held with the runs' blocks. */
static int write_batch(struct kv1_worker *w, struct te_request *r, size_t n, const char *seg,
                       uint64_t bytes, uint64_t end, const struct kv1_run *runs, size_t nruns,
                       struct wphases *ph)
{
	const char *why;
	uint64_t batch;
	size_t next;
	int ret = kv1_hold_room(w, seg, end);

	ph->room = pd_now_ns();
	if (ret)
		return ret;
	ret = te_batch_alloc(w->te, n, &batch);
	ph->alloc = pd_now_ns();
	if (ret)
		return ret;
	ret = te_batch_submit(w->te, batch, r, n);
	ph->submit = pd_now_ns();
	if (ret) {
		te_batch_free(w->te, batch); /* nothing of it was started */
		return ret;
	}
	ret = wait_batch(w, batch, n, end, &next, &why, ph);
	if (!why) {
		int fr = te_batch_free(w->te, batch);

		ph->freed = pd_now_ns();
		if (!fr)
			return ret;
		why = "its batch could not be freed";
		ret = ret ? ret : fr;
	}
	kv1_hold_add(w, batch, n, next, runs, nruns, seg, bytes, why);
	return ret ? ret : TE_ERR_TIMEOUT;
}

static double ms_since(uint64_t a, uint64_t b)
{
	return b >= a && a ? (double)(b - a) / 1e6 : -1.0;
}

/* Submits the batch r[0..n) (freed here), waits for it and counts it. */
static int submit_counted(struct kv1_worker *w, struct te_request *r, size_t n, const char *seg,
                          uint64_t bytes, struct wphases *ph, const struct kv1_run *runs,
                          size_t nruns)
{
	int ret =
	    write_batch(w, r, n, seg, bytes, write_deadline_ns(ph->t0, bytes), runs, nruns, ph);
	uint64_t t1 = pd_now_ns();

	atomic_fetch_add(&w->xfers, 1);
	if (ret)
		atomic_fetch_add(&w->xfer_failures, 1);
	else
		atomic_fetch_add(&w->bytes_sent, bytes);
	pd_dbg("kv1: WRITE %llu bytes in %zu requests to %s: %.1f ms (t=%llu)",
	       (unsigned long long)bytes, n, seg, (double)(t1 - ph->t0) / 1e6,
	       (unsigned long long)ph->t0);
	if (w->write_phases) /* ms from the previous moment; -1: not reached */
		pd_info(
		    "kv1: WRITE phases to %s: %llu bytes, %zu requests: open %.3f room %.3f "
		    "alloc %.3f submit %.3f first %.3f done %.3f free %.3f = %.3f ms; %u waits, "
		    "%.3f ms waited",
		    seg, (unsigned long long)bytes, n, ms_since(ph->t0, ph->seg),
		    ms_since(ph->seg, ph->room), ms_since(ph->room, ph->alloc),
		    ms_since(ph->alloc, ph->submit), ms_since(ph->submit, ph->first),
		    ms_since(ph->submit, ph->done), ms_since(ph->done, ph->freed),
		    ms_since(ph->t0, t1), ph->polls, (double)ph->napped / 1e6);
	if (w->o.on_xfer)
		w->o.on_xfer(w->o.ud, (double)(t1 - ph->t0) / 1e9, ret ? 0 : bytes, n, !ret);
	free(r);
	return ret;
}

int kv1_write_blocks(struct kv1_worker *w, const char *host, int64_t port, const uint64_t *rbases,
                     size_t nrbases, const struct kv1_run *runs, size_t nruns)
{
	size_t nb = nrbases < (size_t)w->o.nbufs ? nrbases : (size_t)w->o.nbufs, n = nb * nruns,
	       k = 0;
	struct te_request *r;
	char seg[300];
	uint64_t segid, bytes = 0;
	struct wphases ph = {.t0 = pd_now_ns()};
	int ret;

	if (!n)
		return 0;
	snprintf(seg, sizeof(seg), "%s:%lld", host, (long long)port);
	r = calloc(n, sizeof(*r));
	if (!r)
		return TE_ERR_MEMORY;
	ret = te_open_segment(w->te, seg, &segid);
	ph.seg = pd_now_ns();
	if (ret) {
		atomic_fetch_add(&w->xfers, 1);
		atomic_fetch_add(&w->xfer_failures, 1);
		if (w->o.on_xfer)
			w->o.on_xfer(w->o.ud, (double)(ph.seg - ph.t0) / 1e9, 0, n, false);
		free(r);
		return ret;
	}
	for (size_t o = 0, b; o < (size_t)w->o.nbufs; o++)
		for (size_t i = 0; (b = (size_t)w->order[o]) < nb && i < nruns; i++) {
			size_t len = w->o.block_len * (size_t)runs[i].n;

			r[k++] = (struct te_request){
			    TE_WRITE, w->bufs[b] + (size_t)runs[i].local * w->o.block_len, segid,
			    rbases[b] + (uint64_t)runs[i].remote * w->o.block_len, len};
			bytes += len;
		}
	return submit_counted(w, r, n, seg, bytes, &ph, runs, nruns);
}

/* A region copies whole runs in one descriptor when both offsets are 0 and it moves whole
 * blocks of the same length on both sides (vLLM's _can_coalesce_block_transfers). */
static bool coalesces(const struct kv1_worker *w, const struct kv1_xregion *x)
{
	return !x->src_off && !x->dst_off && x->len == (int64_t)w->o.block_len &&
	       x->len == x->rblock_len;
}

int kv1_write_regions(struct kv1_worker *w, const char *host, int64_t port,
                      const struct kv1_xregion *x, size_t nx, const struct kv1_run *runs,
                      size_t nruns)
{
	struct kv1_run *one = (struct kv1_run *)runs;

	return kv1_write_regions_g(w, host, port, x, nx, &one, &nruns, 1);
}

/* The runs of region e's group (every region reads group 0's with one group). */
static size_t runs_of(const struct kv1_xregion *e, struct kv1_run *const *gruns,
                      const size_t *gnruns, size_t ng, const struct kv1_run **runs)
{
	size_t g = ng > 1 && e->group >= 0 && (size_t)e->group < ng ? (size_t)e->group : 0;

	*runs = gruns[g];
	return gnruns[g];
}

int kv1_write_regions_g(struct kv1_worker *w, const char *host, int64_t port,
                        const struct kv1_xregion *x, size_t nx, struct kv1_run *const *gruns,
                        const size_t *gnruns, size_t ng)
{
	size_t n = 0, k = 0, nall = 0;
	struct te_request *r;
	struct kv1_run *all;
	char seg[300];
	uint64_t segid, bytes = 0;
	struct wphases ph = {.t0 = pd_now_ns()};
	int ret;

	for (size_t j = 0; j < nx; j++) {
		const struct kv1_run *runs;
		size_t nruns = runs_of(&x[j], gruns, gnruns, ng, &runs), blocks = 0;

		for (size_t i = 0; i < nruns; i++)
			blocks += (size_t)runs[i].n;
		n += coalesces(w, &x[j]) ? nruns : blocks;
	}
	if (!n)
		return 0;
	for (size_t g = 0; g < ng; g++)
		nall += gnruns[g];
	snprintf(seg, sizeof(seg), "%s:%lld", host, (long long)port);
	r = calloc(n, sizeof(*r));
	all =
	    calloc(nall + 1, sizeof(*all)); /* every group's runs: the blocks a held WRITE reads */
	if (!r || !all) {
		free(r);
		free(all);
		return TE_ERR_MEMORY;
	}
	for (size_t g = 0, o = 0; g < ng; o += gnruns[g], g++)
		if (gnruns[g])
			memcpy(all + o, gruns[g], gnruns[g] * sizeof(*all));
	ret = te_open_segment(w->te, seg, &segid);
	ph.seg = pd_now_ns();
	if (ret) {
		free(r);
		free(all);
		return ret;
	}
	/* in the buffers' write order (o.write_order) */
	for (size_t o = 0; o < (size_t)w->o.nbufs; o++)
		for (size_t j = 0; j < nx; j++) {
			const struct kv1_xregion *e = &x[j];
			uint8_t *src = w->bufs[e->buf] + e->src_off;
			const struct kv1_run *runs;
			size_t nruns = runs_of(e, gruns, gnruns, ng, &runs);

			if (e->buf != w->order[o])
				continue;
			for (size_t i = 0; i < nruns; i++) {
				const struct kv1_run *u = &runs[i];

				for (int64_t b = 0; b < u->n; b++) {
					bool whole = coalesces(w, e);
					size_t len = (size_t)e->len * (size_t)(whole ? u->n : 1);

					r[k++] = (struct te_request){
					    TE_WRITE, src + (size_t)(u->local + b) * w->o.block_len,
					    segid,
					    e->rbase +
					        (uint64_t)(u->remote + b) *
					            (uint64_t)e->rblock_len +
					        (uint64_t)e->dst_off,
					    len};
					bytes += len;
					if (whole)
						break;
				}
			}
		}
	ret = submit_counted(w, r, k, seg, bytes, &ph, all, nall);
	free(all);
	return ret;
}
