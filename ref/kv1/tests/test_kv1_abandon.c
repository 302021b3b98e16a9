/* SPDX-License-Identifier: Apache-2.0 */
/* WRITEs the producer gave up on while they were in flight (a slow decode, the worker stopping):
 * their source blocks must not go to another request before the engine has ended them, or the
 * rest of the old WRITE carries the new request's KV into the decode's blocks. Gen B (and gen
 * A) producers and consumers in one process over loopback TE/TCP and real ZMQ sockets; the
 * decode engine's data server holds every WRITE back before reading its body
 * (te_test_set_write_hook) until the test lets it go, and small socket buffers
 * (PDKV_TCP_SOCKBUF) keep most of each body in the producer's blocks meanwhile.
 * MC_SLICE_TIMEOUT=1 makes the producer give up after a second. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv1/kv1.h"
#include "kv1_testlib.h"
#include "pd_util.h"
#include "te/te_inspect.h"
#include "te/tests/te_gate.h"

#define NBUFS     2
#define BLEN      (256 * 1024)
#define NBLK      32
#define NREQ      8  /* blocks of one request: 2 MiB per buffer, one request per buffer */
#define HOLD_WAIT 20 /* s: bound on waiting for the decode to reach a WRITE / P to end it */

static struct kv1_worker *mk(enum cfg_gen gen, bool producer, const char *boot, int base,
                             int abort_s)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, NBUFS, BLEN, NBLK);

	o.base_port = base;
	o.abort_timeout_s = abort_s;
	o.recv_timeout_ms = 30000;
	return kv1t_create(&o);
}

static void open_pair(struct kv1t_pair *x)
{
	kv1t_boot_open(x);
	x->p = mk(CFG_GEN_B0, true, x->boot, 0, 60);
	x->d = mk(CFG_GEN_B0, false, NULL, 0, 60);
}

static void fill(struct kv1_worker *w, const int64_t *ids, size_t n, uint8_t salt)
{
	kv1t_fill(w, NBUFS, BLEN, ids, n, salt);
}

/* D's blocks hold the salt pattern in full; else fails naming the first byte that does not. */
static void expect_fill(struct kv1_worker *w, const int64_t *ids, size_t n, uint8_t salt)
{
	for (int b = 0; b < NBUFS; b++)
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < BLEN; k++) {
				uint8_t v = kv1_block(w, b, ids[i])[k];

				if (v != kv1t_pat(salt, b, i, k))
					fail_msg("decode buffer %d block %zu byte %zu is 0x%02x, "
					         "expected 0x%02x (another request's KV went out "
					         "under the abandoned WRITE)",
					         b, i, k, v, kv1t_pat(salt, b, i, k));
			}
}

/* Waits (at most HOLD_WAIT s) until P holds no abandoned WRITE. */
static void wait_none_held(struct kv1_worker *p)
{
	for (int i = 0; i < HOLD_WAIT * 100 && kv1t_stats(p).writes_abandoned_held; i++)
		pd_sleep_ms(10);
	assert_int_equal(kv1t_stats(p).writes_abandoned_held, 0);
}

static int pull(struct kv1t_pair *x, const char *xfer, const int64_t *di, char *err, size_t errsz)
{
	return kv1_recv_b(x->d, x->boot, "engine-p0", xfer, xfer, di, NREQ, err, errsz);
}

/* The WRITE times out (slice timeout) while D holds it; P's request then ends, but its blocks
 * stay out of the free list: the next request gets other blocks, and once the decode takes
 * the WRITE in, D receives the first request's KV intact and the blocks come back. Before:
 * the blocks were freed at once, the next request got them, and the rest of the old WRITE
 * carried its bytes to D. */
static void test_timeout_holds_blocks(void **state)
{
	struct kv1t_pair x;
	int64_t pi[NREQ], di[NREQ], next[NBLK], extra;
	char err[512];
	struct kv1_stats st;
	(void)state;

	open_pair(&x);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	fill(x.p, pi, NREQ, 1);
	assert_int_equal(kv1_send_ready(x.p, "xfer-1", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	assert_int_equal(pull(&x, "xfer-1", di, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "returned -1003"));
	st = kv1t_stats(x.p);
	assert_int_equal(st.writes_abandoned, 1);
	assert_int_equal(st.writes_abandoned_held, 1);
	/* P's request is over (its entry freed its blocks); the next one takes every free block */
	assert_int_equal(kv1_alloc(x.p, NBLK - NREQ, next), 0);
	assert_int_equal(kv1_alloc(x.p, 1, &extra), -ENOSPC);
	for (size_t i = 0; i < NBLK - NREQ; i++)
		if (kv1t_among(next[i], pi, NREQ))
			fail_msg("block %lld went to another request while the abandoned WRITE "
			         "could still read it",
			         (long long)next[i]);
	fill(x.p, next, NBLK - NREQ, 2);
	te_gate_release();
	wait_none_held(x.p);
	expect_fill(x.d, di, NREQ, 1);
	/* the held blocks are back: exactly the abandoned request's */
	assert_int_equal(kv1_alloc(x.p, NREQ, next), 0);
	for (size_t i = 0; i < NREQ; i++)
		assert_true(kv1t_among(next[i], pi, NREQ));
	kv1_free(x.p, next, NREQ);
	kv1t_pair_close(&x);
}

/* PDKV_KV1_MAX_HELD_WRITES=1: with one WRITE held, the next waits for room until its deadline
 * (MC_TRANSFER_TIMEOUT=5) and is refused; once the decode takes the first in, WRITEs work. */
static void test_cap(void **state)
{
	struct kv1t_pair x;
	int64_t pi[NREQ], di[NREQ];
	char err[512];
	struct kv1_stats st;
	(void)state;

	setenv("PDKV_KV1_MAX_HELD_WRITES", "1", 1);
	setenv("MC_TRANSFER_TIMEOUT", "5", 1);
	open_pair(&x);
	unsetenv("PDKV_KV1_MAX_HELD_WRITES");
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	fill(x.p, pi, NREQ, 3);
	assert_int_equal(kv1_send_ready(x.p, "xfer-1", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	assert_int_equal(pull(&x, "xfer-1", di, err, sizeof(err)), -EIO);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	fill(x.p, pi, NREQ, 4);
	assert_int_equal(kv1_send_ready(x.p, "xfer-2", pi, NREQ), 0);
	assert_int_equal(pull(&x, "xfer-2", di, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "returned -2"));
	st = kv1t_stats(x.p);
	assert_int_equal(st.writes_abandoned, 1);
	assert_int_equal(st.writes_refused, 1);
	assert_int_equal(st.writes_abandoned_held, 1);
	te_gate_release();
	wait_none_held(x.p);
	expect_fill(x.d, di, NREQ, 3);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	fill(x.p, pi, NREQ, 5);
	assert_int_equal(kv1_send_ready(x.p, "xfer-3", pi, NREQ), 0);
	assert_int_equal(pull(&x, "xfer-3", di, err, sizeof(err)), 0);
	expect_fill(x.d, di, NREQ, 5);
	unsetenv("MC_TRANSFER_TIMEOUT");
	kv1t_pair_close(&x);
}

/* Gen A keeps a failed request's entry (a retry may come) until abort_timeout_s: its blocks are
 * freed by the expiry on the ROUTER thread, while the abandoned WRITE may still read them. */
static void test_gen_a_expiry(void **state)
{
	int base = pd_free_port("127.0.0.1");
	struct kv1_worker *p = mk(CFG_GEN_A, true, NULL, base, 2);
	struct kv1_worker *d = mk(CFG_GEN_A, false, NULL, base, 2);
	int64_t pi[NREQ], di[NREQ], next[NBLK], extra;
	char err[512];
	(void)state;

	assert_int_equal(kv1_alloc(p, NREQ, pi), 0);
	assert_int_equal(kv1_alloc(d, NREQ, di), 0);
	fill(p, pi, NREQ, 7);
	assert_int_equal(kv1_send_expect(p, "cmpl-a-0"), 0);
	assert_int_equal(kv1_send_ready(p, "cmpl-a-0", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	assert_int_equal(
	    kv1_recv_a(d, kv1_worker_ip(p), base, "cmpl-a-0", di, NREQ, err, sizeof(err)), -EIO);
	assert_int_equal(kv1t_stats(p).writes_abandoned, 1);
	for (int i = 0; i < HOLD_WAIT * 100 && !kv1t_stats(p).expired; i++)
		pd_sleep_ms(10);
	assert_int_equal(kv1t_stats(p).expired, 1);
	assert_int_equal(kv1t_stats(p).writes_abandoned_held, 1);
	assert_int_equal(kv1_alloc(p, NBLK - NREQ, next), 0);
	assert_int_equal(kv1_alloc(p, 1, &extra), -ENOSPC);
	fill(p, next, NBLK - NREQ, 8);
	te_gate_release();
	wait_none_held(p);
	expect_fill(d, di, NREQ, 7);
	assert_int_equal(kv1_alloc(p, NREQ, next), 0);
	for (size_t i = 0; i < NREQ; i++)
		assert_true(kv1t_among(next[i], pi, NREQ));
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
}

struct puller {
	struct kv1t_pair *x;
	int64_t *di;
	int ret;
	char err[512];
};

static void *pull_main(void *arg)
{
	struct puller *u = arg;

	u->ret = pull(u->x, "xfer-1", u->di, u->err, sizeof(u->err));
	return NULL;
}

/* No slice timeout: the producer stops while the decode holds its WRITE. The handler gives the
 * WRITE up (answering the decode), the destroy ends it with the engine and frees it (ASan sees
 * no leak). Before: the handler kept waiting, the destroy left the worker to the process. */
static void test_stop(void **state)
{
	struct kv1t_pair x;
	struct puller u;
	int64_t pi[NREQ], di[NREQ];
	pthread_t t;
	(void)state;

	unsetenv("MC_SLICE_TIMEOUT");
	open_pair(&x);
	setenv("MC_SLICE_TIMEOUT", "1", 1);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	fill(x.p, pi, NREQ, 6);
	assert_int_equal(kv1_send_ready(x.p, "xfer-1", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	u = (struct puller){&x, di, 0, ""};
	assert_int_equal(pthread_create(&t, NULL, pull_main, &u), 0);
	if (!te_gate_wait_held(HOLD_WAIT))
		fail_msg("the decode never received the WRITE");
	kv1_worker_destroy(x.p);
	x.p = NULL;
	pthread_join(t, NULL);
	te_gate_release();
	assert_int_equal(u.ret, -EIO);
	assert_non_null(strstr(u.err, "returned -1003"));
	kv1_worker_destroy(x.d);
	kv1_boot_stop(x.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timeout_holds_blocks),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_gen_a_expiry),
	    cmocka_unit_test(test_stop),
	};

	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	setenv("MC_SLICE_TIMEOUT", "1", 1);
	setenv("PDKV_TCP_SOCKBUF", "65536", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
