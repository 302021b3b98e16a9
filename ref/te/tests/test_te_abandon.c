/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_abandon: te_batch_abandon and te_batch_wait. A batch given up while its WRITEs are in
 * flight keeps its
 * source memory until the engine has ended every task: release is not called (and the memory
 * not reused) while the target holds a WRITE back (te_gate), it is called once after, and
 * te_engine_destroy releases what is still held once its lanes are gone. Two engines in one
 * process over loopback TCP; small socket buffers keep the held WRITE's body in the source. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "pd_util.h"
#include "te/te.h"
#include "te/tests/te_gate.h"

#define LEN     (4u << 20) /* per request: far more than the socket buffers hold */
#define WAIT_S  20         /* bound on every wait for the engine */
#define PATTERN 0x5a
#define REUSED  0xee

struct rel {
	int calls;
	bool engine_gone;
	uint8_t *src; /* reused (overwritten) or freed by the release */
	size_t len;
	bool free_it;
};

static void on_release(void *ud, bool engine_gone)
{
	struct rel *r = ud;

	r->calls++;
	r->engine_gone = engine_gone;
	if (r->free_it) {
		free(r->src);
		r->src = NULL;
	} else {
		memset(r->src, REUSED, r->len); /* the caller's next request reuses the memory */
	}
}

static struct te_engine *mk(const char *name)
{
	struct te_engine_opts o = {"P2PHANDSHAKE", name, "tcp", NULL};
	struct te_engine *e = NULL;
	int rc = te_engine_create(&o, &e);

	if (rc)
		fail_msg("te_engine_create(%s): %d %s", name, rc, te_strerror(rc));
	return e;
}

/* Submits n WRITEs of LEN from src to dst on b; returns the batch. */
static uint64_t write_batch(struct te_engine *a, struct te_engine *b, uint8_t *src, uint8_t *dst,
                            size_t n)
{
	struct te_request r[2];
	uint64_t seg, batch;

	assert_true(n <= 2);
	assert_int_equal(te_open_segment(a, te_engine_name(b), &seg), 0);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct te_request){TE_WRITE, src + i * LEN, seg,
		                           (uint64_t)(uintptr_t)(dst + i * LEN), LEN};
	assert_int_equal(te_batch_alloc(a, n, &batch), 0);
	assert_int_equal(te_batch_submit(a, batch, r, n), 0);
	return batch;
}

/* src (filled with PATTERN) on a, dst on b, len bytes each. */
static void register_pair(struct te_engine *a, struct te_engine *b, uint8_t *src, uint8_t *dst,
                          size_t len)
{
	assert_non_null(src);
	assert_non_null(dst);
	memset(src, PATTERN, len);
	assert_int_equal(te_register(a, src, len, "cpu:0"), 0);
	assert_int_equal(te_register(b, dst, len, "cpu:0"), 0);
}

static size_t reap_until(struct te_engine *a, const struct rel *r, int calls)
{
	uint64_t end = pd_now_ns() + WAIT_S * 1000000000ull;
	size_t n = 0;

	while (r->calls < calls && pd_now_ns() < end) {
		n += te_batch_reap(a);
		nanosleep(&(struct timespec){0, 5000000}, NULL);
	}
	return n;
}

/* Two WRITEs, one held at the target: abandoned, the batch is the engine's; release waits for
 * the held one, and the target gets the source's bytes, not the reused ones. */
static void test_abandon_in_flight(void **state)
{
	struct te_engine *a = mk("ab_src"), *b = mk("ab_dst");
	uint8_t *src = malloc(2 * LEN), *dst = calloc(2, LEN);
	struct rel r = {0, false, src, 2 * LEN, false};
	struct te_task_status st;
	uint64_t batch;
	(void)state;

	register_pair(a, b, src, dst, 2 * LEN);
	te_gate_arm(TE_GATE_WRITE, 1);
	batch = write_batch(a, b, src, dst, 2);
	assert_true(te_gate_wait_held(WAIT_S));

	assert_int_equal(te_batch_abandon(a, batch, on_release, &r), 0);
	assert_int_equal(te_batch_abandoned(a), 1);
	/* the id is the engine's now */
	assert_int_equal(te_batch_status(a, batch, 0, &st), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_free(a, batch), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_abandon(a, batch, on_release, &r), TE_ERR_BAD_BATCH);
	/* one WRITE is held at the target: not ended, however often the caller reaps */
	for (int i = 0; i < 50; i++) {
		assert_int_equal(te_batch_reap(a), 0);
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	assert_int_equal(r.calls, 0);
	assert_int_equal(te_batch_abandoned(a), 1);

	te_gate_release();
	assert_int_equal(reap_until(a, &r, 1), 1);
	assert_int_equal(r.calls, 1);
	assert_false(r.engine_gone);
	assert_int_equal(te_batch_abandoned(a), 0);
	assert_int_equal(te_batch_reap(a), 0);
	/* every byte that reached the target is the source's, none the reused memory's */
	for (size_t i = 0; i < 2 * LEN; i++)
		if (dst[i] != PATTERN)
			fail_msg("target byte %zu is 0x%02x, not 0x%02x", i, dst[i], PATTERN);
	te_engine_destroy(a);
	te_engine_destroy(b);
	assert_int_equal(r.calls, 1); /* once */
	free(src);
	free(dst);
}

/* A batch abandoned and still held at destroy: te_engine_destroy releases it after its lanes
 * are gone, so the release may free the memory (ASan: no lane reads it after). */
static void test_abandon_destroy(void **state)
{
	struct te_engine *a = mk("ad_src"), *b = mk("ad_dst");
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN);
	struct rel r = {0, false, src, LEN, true};
	uint64_t batch;
	(void)state;

	assert_non_null(src);
	assert_non_null(dst);
	memset(src, PATTERN, LEN);
	assert_int_equal(te_register(a, src, LEN, "cpu:0"), 0);
	assert_int_equal(te_register(b, dst, LEN, "cpu:0"), 0);
	te_gate_arm(TE_GATE_WRITE, 1);
	batch = write_batch(a, b, src, dst, 1);
	assert_true(te_gate_wait_held(WAIT_S));
	assert_int_equal(te_batch_abandon(a, batch, on_release, &r), 0);
	assert_int_equal(te_batch_reap(a), 0);
	assert_int_equal(r.calls, 0);
	te_engine_destroy(a); /* frees src through the release */
	assert_int_equal(r.calls, 1);
	assert_true(r.engine_gone);
	assert_null(r.src);
	te_gate_release();
	te_engine_destroy(b);
	free(dst);
}

/* Misuse: an unknown id, a NULL engine; a finished batch abandoned is released on the next
 * reap (release NULL is allowed). */
static void test_abandon_misuse(void **state)
{
	struct te_engine *a = mk("am_src"), *b = mk("am_dst");
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN);
	struct te_task_status st = {0, 0};
	uint64_t batch, end;
	(void)state;

	assert_int_equal(te_batch_abandon(NULL, 1, NULL, NULL), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_batch_abandon(a, 12345, NULL, NULL), TE_ERR_BAD_BATCH);
	assert_int_equal(te_batch_reap(NULL), 0);
	assert_int_equal(te_batch_abandoned(NULL), 0);
	memset(src, PATTERN, LEN);
	assert_int_equal(te_register(a, src, LEN, "cpu:0"), 0);
	assert_int_equal(te_register(b, dst, LEN, "cpu:0"), 0);
	batch = write_batch(a, b, src, dst, 1);
	end = pd_now_ns() + WAIT_S * 1000000000ull;
	do
		assert_int_equal(te_batch_status(a, batch, 0, &st), 0);
	while (st.status != TE_COMPLETED && pd_now_ns() < end);
	assert_int_equal(st.status, TE_COMPLETED);
	assert_int_equal(te_batch_abandon(a, batch, NULL, NULL), 0);
	assert_int_equal(te_batch_reap(a), 1);
	assert_int_equal(te_batch_abandoned(a), 0);
	te_engine_destroy(a);
	te_engine_destroy(b);
	free(src);
	free(dst);
}

struct waiter {
	struct te_engine *a;
	uint64_t batch;
	int rc;
	uint64_t done_ns;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	do /* BUSY: the main thread's probe holds the batch for a moment */
		w->rc = te_batch_wait(w->a, w->batch, 0, WAIT_S * 1000000ull);
	while (w->rc == TE_ERR_BATCH_BUSY);
	w->done_ns = pd_now_ns();
	return NULL;
}

/* te_batch_wait: a held WRITE keeps it asleep until its timeout; a second waiter, a free or an
 * abandon of the batch it waits on are refused; once the target lets the WRITE through the
 * waiter wakes, and every status is final after at most a few yields. */
static void test_batch_wait(void **state)
{
	struct te_engine *a = mk("bw_src"), *b = mk("bw_dst");
	uint8_t *src = malloc(2 * LEN), *dst = calloc(2, LEN);
	struct waiter w = {0};
	struct te_task_status st;
	pthread_t t;
	uint64_t t0;
	int rc = 0;
	(void)state;

	register_pair(a, b, src, dst, 2 * LEN);
	assert_int_equal(te_batch_wait(NULL, 1, 0, 1), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_batch_wait(a, 12345, 0, 1), TE_ERR_BAD_BATCH);
	te_gate_arm(TE_GATE_WRITE, 1);
	w.a = a;
	w.batch = write_batch(a, b, src, dst, 2);
	assert_true(te_gate_wait_held(WAIT_S));
	t0 = pd_now_ns();
	assert_int_equal(te_batch_wait(a, w.batch, 0, 100000), TE_ERR_TIMEOUT);
	assert_true(pd_now_ns() - t0 >= 100000000ull);
	assert_int_equal(te_batch_wait(a, w.batch, 2, 1), 0); /* at most 2 open: already so */

	assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
	for (int i = 0; i < 2000 && (rc = te_batch_wait(a, w.batch, 0, 1)) != TE_ERR_BATCH_BUSY;
	     i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_int_equal(rc, TE_ERR_BATCH_BUSY); /* the thread waits: one waiter at a time */
	assert_int_equal(te_batch_abandon(a, w.batch, NULL, NULL), TE_ERR_BATCH_BUSY);
	assert_int_equal(te_batch_free(a, w.batch), TE_ERR_BATCH_BUSY);
	nanosleep(&(struct timespec){0, 50000000}, NULL);
	assert_int_equal(w.done_ns, 0); /* still asleep: the WRITE is held */

	te_gate_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, 0);
	for (size_t i = 0; i < 2; i++) {
		int k = 0;

		do {
			assert_int_equal(te_batch_status(a, w.batch, i, &st), 0);
			if (st.status != TE_COMPLETED)
				sched_yield();
		} while (st.status != TE_COMPLETED && ++k < 1000);
		assert_int_equal(st.status, TE_COMPLETED);
	}
	assert_int_equal(te_batch_free(a, w.batch), 0);
	assert_memory_equal(dst, src, 2 * LEN);
	te_engine_destroy(a);
	te_engine_destroy(b);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_abandon_in_flight),
	    cmocka_unit_test(test_abandon_destroy),
	    cmocka_unit_test(test_abandon_misuse),
	    cmocka_unit_test(test_batch_wait),
	};

	setenv("VLLM_HOST_IP", "127.0.0.1", 0);
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 0);
	setenv("PDKV_TCP_SOCKBUF", "65536", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
