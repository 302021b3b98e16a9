/* SPDX-License-Identifier: Apache-2.0 */
/* bench_fanout: the one initiator loop every back-end runs on (the engine, the plain socket) —
 * o->threads threads, warm-up, barrier, timed batches with --check, and the one reduce; several
 * such rows at once behind one barrier for --scheme's pairs. */
#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pd_util.h"

/* Offset of this thread's i-th block in the region: blocks interleave across threads (the
 * --check pattern's seed position; bench_block gives its address). */
static uint64_t block_off(const struct bench_thread *th, uint64_t i)
{
	return th->block * (i * th->o->threads + (uint64_t)th->t);
}

/* --check's pattern fill / zero / count, through th->tmp when the memory is on the GPU */
static void xfill(struct bench_thread *th, char *dst, uint64_t off, uint64_t seed)
{
	if (!th->vram) {
		bench_fill(dst, off, th->block, seed);
		return;
	}
	bench_fill(th->tmp, off, th->block, seed);
	if (bench_mem_put(th->o, dst, th->tmp, th->block) && !th->err)
		th->err = th->be->err_memory;
}

static void xzero(struct bench_thread *th, char *dst)
{
	if (!th->vram) {
		memset(dst, 0, th->block);
		return;
	}
	if (bench_mem_zero(th->o, dst, th->block) && !th->err)
		th->err = th->be->err_memory;
}

static uint64_t xcount(struct bench_thread *th, const char *p, uint64_t off, uint64_t seed)
{
	if (!th->vram)
		return bench_count_wrong(p, off, th->block, seed);
	if (bench_mem_get(th->o, th->tmp, p, th->block))
		return th->block;
	return bench_count_wrong(th->tmp, off, th->block, seed);
}

/* Untimed: the target's READ pattern rewritten over our blocks (a target that earlier
 * initiators wrote to still checks clean), then one warm-up batch (connections, first touch). */
static void warm_up(struct bench_thread *th)
{
	const struct bench_opts *o = th->o;
	double s;
	if (o->check && o->op == BENCH_READ) {
		for (uint64_t i = 0; i < o->batch; i++)
			xfill(th, bench_block(th, false, i), block_off(th, i), 0);
		if (!th->err)
			th->err = th->be->batch(th, BENCH_WRITE, th->local, false, &s);
	}
	if (!th->err)
		th->err = th->be->batch(th, o->op, th->local, false, &s);
}

/* --check before a timed batch: WRITE's pattern into the local blocks, READ's blocks zeroed. */
static void prep_batch(struct bench_thread *th, uint64_t iter)
{
	const struct bench_opts *o = th->o;
	if (!o->check)
		return;
	for (uint64_t i = 0; i < o->batch; i++) {
		if (o->op == BENCH_WRITE)
			xfill(th, bench_block(th, false, i), block_off(th, i), iter);
		else
			xzero(th, bench_block(th, false, i));
	}
}

/* A timed batch of s seconds is done: counted and, with --check, verified (WRITE: read back
 * into scratch). */
static void end_batch(struct bench_thread *th, uint64_t iter, double s)
{
	const struct bench_opts *o = th->o;
	th->xfer_s += s;
	th->batches++;
	th->transfers += o->batch;
	if (!o->check)
		return;
	if (o->op == BENCH_WRITE &&
	    (th->err = th->be->batch(th, BENCH_READ, th->scratch, false, &s)))
		return;
	for (uint64_t i = 0; i < o->batch; i++) {
		uint64_t off = block_off(th, i);
		const char *p = bench_block(th, o->op == BENCH_WRITE, i);
		th->wrong += xcount(th, p, off, o->op == BENCH_WRITE ? iter : 0);
	}
}

/* One timed batch and, with --check, its verification. */
static void timed_batch(struct bench_thread *th, uint64_t iter)
{
	double s;
	prep_batch(th, iter);
	if (th->err || (th->err = th->be->batch(th, th->o->op, th->local, true, &s)))
		return;
	end_batch(th, iter, s);
}

/* A lockstep row's batch clock. go and stop are written only between the end barrier of one
 * batch and the start barrier of the next, and read only between start and end, so every
 * thread takes the same decision. A batch starts at the earliest clock read after its start
 * barrier (a thread may be preempted before it reads the clock, never before the barrier lets
 * it go) and ends at the latest end of a part; t_start and t_end alternate by batch so that
 * one batch's readers and the next batch's writers never share a slot. */
struct bench_step {
	pthread_barrier_t start, end;
	atomic_bool go, stop;
	_Atomic uint64_t t_start[2], t_end[2];
};

static bool more_batches(const struct bench_opts *o, uint64_t iter, uint64_t end)
{
	return o->latency ? iter <= o->iterations : pd_now_ns() < end;
}

static void atomic_min_max(_Atomic uint64_t *v, uint64_t x, bool max)
{
	uint64_t cur = atomic_load(v);
	while ((max ? cur < x : cur > x) && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

/* The timed loop of a lockstep row: every thread's part of batch k starts at the same barrier,
 * and the batch's time, from its start to the end of its last part, is every thread's. */
static void lockstep_loop(struct bench_thread *th, uint64_t end, const struct timespec *gap)
{
	struct bench_step *st = th->step;
	const struct bench_opts *o = th->o;

	if (th->t == 0) /* the first batch's slot, before any thread passes a barrier */
		atomic_store(&st->t_start[1], UINT64_MAX);
	for (uint64_t iter = 1;; iter++) {
		uint64_t k = iter & 1;
		double s = 0;
		if (!th->err)
			prep_batch(th, iter);
		if (th->err)
			atomic_store(&st->stop, true);
		if (th->t == 0)
			atomic_store(&st->go, more_batches(o, iter, end));
		pthread_barrier_wait(&st->start);
		atomic_min_max(&st->t_start[k], pd_now_ns(), false);
		if (!atomic_load(&st->go) || atomic_load(&st->stop))
			return;
		th->err = th->be->batch(th, o->op, th->local, true, &s);
		atomic_min_max(&st->t_end[k], pd_now_ns(), true);
		pthread_barrier_wait(&st->end);
		s = (double)(atomic_load(&st->t_end[k]) - atomic_load(&st->t_start[k])) / 1e9;
		if (th->t == 0) { /* the next batch's slots: nobody reads them until its start */
			atomic_store(&st->t_start[k ^ 1], UINT64_MAX);
			atomic_store(&st->t_end[k ^ 1], 0);
		}
		if (th->err)
			continue;
		end_batch(th, iter, s);
		if (o->gap_ms > 0 && pd_now_ns() < end)
			nanosleep(gap, NULL);
	}
}

static void *thread_main(void *arg)
{
	struct bench_thread *th = arg;
	const struct bench_opts *o = th->o;
	uint64_t end, iter = 0;
	struct timespec gap = {(time_t)(o->gap_ms / 1000), (long)(fmod(o->gap_ms, 1000) * 1e6)};

	th->err = th->be->thread_init(th);
	if (!th->err && th->vram && o->check && !(th->tmp = malloc(th->block)))
		th->err = th->be->err_memory;
	if (!th->err)
		warm_up(th);
	pthread_barrier_wait(th->bar);
	th->failed = 0; /* the warm-up's do not count */
	end = pd_now_ns() + (uint64_t)(o->duration * 1e9);
	if (th->step) /* its barriers need every thread, one that failed included */
		lockstep_loop(th, end, &gap);
	/* --latency: exactly o->iterations timed requests, however long they take */
	while (!th->step && !th->err && more_batches(o, iter + 1, end)) {
		timed_batch(th, ++iter);
		if (o->gap_ms > 0 && pd_now_ns() < end)
			nanosleep(&gap, NULL);
	}
	if (th->be->thread_fini)
		th->be->thread_fini(th);
	free(th->tmp);
	return NULL;
}

/* The one reduce: sums, the slowest thread's transfer time, merged latencies. */
static int reduce(const struct bench_opts *o, struct bench_thread *th, struct bench_row *row,
                  uint64_t t0)
{
	struct bench_lat all = {0};
	int err = 0;
	for (uint64_t t = 0; t < o->threads; t++) {
		if (th[t].err && !err)
			err = th[t].err;
		row->batches += th[t].batches;
		row->transfers += th[t].transfers;
		row->wrong += th[t].wrong;
		row->failed += th[t].failed;
		if (th[t].xfer_s > row->seconds)
			row->seconds = th[t].xfer_s;
		bench_lat_merge(&all, &th[t].lat);
	}
	row->wall = (double)(pd_now_ns() - t0) / 1e9;
	row->bytes = row->transfers * row->block;
	row->bw = bench_bw(o, row->bytes, row->seconds);
	bench_lat_pct(&all, &row->lat_p50_us, &row->lat_p99_us);
	row->lat_max_us = all.n ? all.v[all.n - 1] : 0; /* sorted by bench_lat_pct */
	free(all.v);
	return err;
}

/* Does lane l run in lockstep? One thread has nobody to keep step with. */
static bool lane_lockstep(const struct bench_lane *l)
{
	return l->lockstep && l->o->threads > 1;
}

int bench_run_lanes(struct bench_lane *lanes, size_t n)
{
	struct bench_thread *th;
	struct bench_step *steps;
	pthread_t *tid;
	pthread_barrier_t bar;
	size_t total = 0, k = 0;
	uint64_t t0;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		total += lanes[i].o->threads;
	th = calloc(total, sizeof(*th));
	tid = calloc(total, sizeof(*tid));
	steps = calloc(n, sizeof(*steps));
	if (!th || !tid || !steps) {
		fprintf(stderr, "pdkv-bench: out of memory for %zu threads\n", total);
		exit(1);
	}
	pthread_barrier_init(&bar, NULL, (unsigned)total);
	t0 = pd_now_ns();
	for (size_t i = 0; i < n; i++) {
		struct bench_lane *l = &lanes[i];
		bool lockstep = lane_lockstep(l);
		bench_row_init(&l->row, l->be->kind, l->o, l->block);
		if (lockstep) {
			pthread_barrier_init(&steps[i].start, NULL, (unsigned)l->o->threads);
			pthread_barrier_init(&steps[i].end, NULL, (unsigned)l->o->threads);
		}
		for (uint64_t t = 0; t < l->o->threads; t++, k++) {
			th[k] = (struct bench_thread){.be = l->be,
			                              .ctx = l->ctx,
			                              .o = l->o,
			                              .bar = &bar,
			                              .t = (int)t,
			                              .block = l->block,
			                              .step = lockstep ? &steps[i] : NULL};
			if (pthread_create(&tid[k], NULL, thread_main, &th[k])) {
				fprintf(stderr, "pdkv-bench: cannot start thread %zu\n", k);
				exit(1);
			}
		}
	}
	for (k = 0; k < total; k++)
		pthread_join(tid[k], NULL);
	pthread_barrier_destroy(&bar);
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (lane_lockstep(&lanes[i])) {
			pthread_barrier_destroy(&steps[i].start);
			pthread_barrier_destroy(&steps[i].end);
		}
		int e = reduce(lanes[i].o, &th[k], &lanes[i].row, t0);
		if (e && !err)
			err = e;
		k += lanes[i].o->threads;
	}
	free(th);
	free(tid);
	free(steps);
	return err;
}

int bench_run_row(const struct bench_backend *be, void *ctx, const struct bench_opts *o,
                  uint64_t block, struct bench_row *row)
{
	struct bench_lane lane = {.be = be, .ctx = ctx, .o = o, .block = block};
	int err = bench_run_lanes(&lane, 1);
	*row = lane.row;
	return err;
}
