/* SPDX-License-Identifier: Apache-2.0 */
/* The decode's side of an abandoned WRITE: a receive that times out while the producer's WRITE
 * is still on its way must not hand its destination blocks to the next request, or the late
 * WRITE carries the old request's KV into the new one. Gen B producer and consumer in one
 * process over loopback TE/TCP and real ZMQ sockets; the decode engine's data server holds
 * every WRITE back before reading its body (te_test_set_write_hook) until the test lets it go.
 * The decode's receive timeout is 1 s. */
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
#define BLEN      (64 * 1024)
#define NBLK      32
#define NREQ      8
#define HOLD_WAIT 20 /* s: bound on waiting for the late WRITE to land */

static struct kv1_worker *mk_gen(enum cfg_gen gen, bool producer, const char *boot, int base,
                                 int abort_s, int hold_s, int recv_ms)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, NBUFS, BLEN, NBLK);

	o.base_port = base;
	o.abort_timeout_s = abort_s;
	o.recv_timeout_ms = recv_ms;
	o.recv_hold_s = hold_s;
	return kv1t_create(&o);
}

static struct kv1_worker *mk(bool producer, const char *boot, int abort_s, int hold_s, int recv_ms)
{
	return mk_gen(CFG_GEN_B0, producer, boot, 0, abort_s, hold_s, recv_ms);
}

static void open_pair(struct kv1t_pair *x, int abort_s, int hold_s, int recv_ms)
{
	kv1t_boot_open(x);
	x->p = mk(true, x->boot, abort_s, 0, recv_ms);
	x->d = mk(false, NULL, abort_s, hold_s, recv_ms);
}

static void fill(struct kv1_worker *w, const int64_t *ids, size_t n, uint8_t salt)
{
	kv1t_fill(w, NBUFS, BLEN, ids, n, salt);
}

static void expect_fill(struct kv1_worker *w, const int64_t *ids, size_t n, uint8_t salt,
                        const char *what)
{
	for (int b = 0; b < NBUFS; b++)
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < BLEN; k++) {
				uint8_t v = kv1_block(w, b, ids[i])[k];

				if (v != kv1t_pat(salt, b, i, k))
					fail_msg(
					    "%s: decode buffer %d block %lld byte %zu is 0x%02x, "
					    "expected 0x%02x",
					    what, b, (long long)ids[i], k, v,
					    kv1t_pat(salt, b, i, k));
			}
}

static int pull(struct kv1t_pair *x, const char *xfer, const int64_t *di, char *err, size_t errsz)
{
	return kv1_recv_b(x->d, x->boot, "engine-p0", xfer, xfer, di, NREQ, err, errsz);
}

/* D's receive times out while P's WRITE waits in D's server; D frees the request's blocks as
 * the stand-in does. They stay out of the free list: the next requests get every other block
 * and no more. Then the late WRITE lands (in the old blocks only, the new request's KV stays
 * intact) and, every byte of it in, the blocks come back without waiting out the hold. Before:
 * the timed-out receive's blocks went to the next request and the late WRITE overwrote them. */
static void test_timeout_holds_blocks(void **state)
{
	struct kv1t_pair x;
	int64_t pi[NREQ], di[NREQ], next[NBLK], extra;
	char err[512];
	struct kv1_stats st;
	bool waited;
	(void)state;

	open_pair(&x, 60, 0, 1000);
	assert_int_equal(kv1_alloc(x.p, NREQ, pi), 0);
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	fill(x.p, pi, NREQ, 1);
	assert_int_equal(kv1_send_ready(x.p, "xfer-1", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	assert_int_equal(pull(&x, "xfer-1", di, err, sizeof(err)), -ETIMEDOUT);
	kv1_free(x.d, di, NREQ);
	assert_int_equal(kv1_alloc(x.d, NBLK - NREQ, next), 0);
	for (size_t i = 0; i < NBLK - NREQ; i++)
		if (kv1t_among(next[i], di, NREQ))
			fail_msg("block %lld went to another request while the late WRITE could "
			         "still land in it",
			         (long long)next[i]);
	st = kv1t_stats(x.d);
	assert_int_equal(st.recv_holds, 1);
	assert_int_equal(st.recv_held_blocks, NREQ);
	assert_int_equal(kv1_alloc(x.d, 1, &extra), -ENOSPC);
	assert_int_equal(kv1_alloc_wait(x.d, 1, &extra, pd_now_ns() + 100000000ull, &waited),
	                 -ETIMEDOUT);
	/* the next request's KV arrives in its own blocks */
	fill(x.d, next, NREQ, 9);
	/* the WRITE is on its way (D's server holds it); let it land now */
	for (int i = 0; i < HOLD_WAIT * 100 && !te_gate_seen(); i++)
		pd_sleep_ms(10);
	assert_true(te_gate_seen() > 0);
	te_gate_release();
	for (int i = 0; i < HOLD_WAIT * 100 && kv1t_stats(x.d).recv_held_blocks; i++)
		pd_sleep_ms(10);
	assert_int_equal(kv1t_stats(x.d).recv_held_blocks, 0);
	expect_fill(x.d, next, NREQ, 9, "the next request's blocks");
	expect_fill(x.d, di, NREQ, 1, "the timed-out request's blocks");
	/* released: exactly the held blocks are free again */
	assert_int_equal(kv1_alloc(x.d, NREQ, pi), 0);
	for (size_t i = 0; i < NREQ; i++)
		assert_true(kv1t_among(pi[i], di, NREQ));
	kv1t_pair_close(&x);
}

/* Gen A: the REQ gets no trans_done within the receive timeout while the WRITE waits in D's
 * server; the blocks stay held until it has landed in full, the next request's stay intact. */
static void test_gen_a(void **state)
{
	int base = pd_free_port("127.0.0.1");
	struct kv1_worker *p = mk_gen(CFG_GEN_A, true, NULL, base, 60, 0, 1000);
	struct kv1_worker *d = mk_gen(CFG_GEN_A, false, NULL, base, 60, 0, 1000);
	int64_t pi[NREQ], di[NREQ], next[NBLK], extra;
	char err[512];
	(void)state;

	assert_int_equal(kv1_alloc(p, NREQ, pi), 0);
	assert_int_equal(kv1_alloc(d, NREQ, di), 0);
	fill(p, pi, NREQ, 3);
	assert_int_equal(kv1_send_expect(p, "cmpl-a-0"), 0);
	assert_int_equal(kv1_send_ready(p, "cmpl-a-0", pi, NREQ), 0);
	te_gate_arm(TE_GATE_WRITE, INT_MAX);
	assert_int_equal(
	    kv1_recv_a(d, kv1_worker_ip(p), base, "cmpl-a-0", di, NREQ, err, sizeof(err)),
	    -ETIMEDOUT);
	kv1_free(d, di, NREQ);
	assert_int_equal(kv1_alloc(d, NBLK - NREQ, next), 0);
	for (size_t i = 0; i < NBLK - NREQ; i++)
		if (kv1t_among(next[i], di, NREQ))
			fail_msg("block %lld went to another request while the late WRITE could "
			         "still land in it",
			         (long long)next[i]);
	assert_int_equal(kv1_alloc(d, 1, &extra), -ENOSPC);
	assert_int_equal(kv1t_stats(d).recv_holds, 1);
	fill(d, next, NBLK - NREQ, 4);
	for (int i = 0; i < HOLD_WAIT * 100 && !te_gate_seen(); i++)
		pd_sleep_ms(10);
	assert_true(te_gate_seen() > 0);
	te_gate_release();
	for (int i = 0; i < HOLD_WAIT * 100 && kv1t_stats(d).recv_held_blocks; i++)
		pd_sleep_ms(10);
	assert_int_equal(kv1t_stats(d).recv_held_blocks, 0);
	expect_fill(d, next, NBLK - NREQ, 4, "the next request's blocks");
	expect_fill(d, di, NREQ, 3, "the timed-out request's blocks");
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
}

/* A hold that nothing lands in ends at its deadline (recv_hold_s = 1): the blocks come back to
 * an allocation waiting for the whole pool. P never made the request ready: no WRITE. */
static void test_deadline(void **state)
{
	struct kv1t_pair x;
	int64_t di[NREQ], all[NBLK];
	char err[512];
	(void)state;

	open_pair(&x, 60, 1, 1000);
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	assert_int_equal(pull(&x, "xfer-none", di, err, sizeof(err)), -ETIMEDOUT);
	assert_int_equal(kv1t_stats(x.d).recv_holds, 1);
	kv1_free(x.d, di, NREQ);
	assert_int_equal(kv1_alloc(x.d, NBLK, all), -ENOSPC);
	assert_int_equal(
	    kv1_alloc_wait(x.d, NBLK, all, pd_now_ns() + HOLD_WAIT * 1000000000ull, NULL), 0);
	assert_int_equal(kv1t_stats(x.d).recv_held_blocks, 0);
	kv1_free(x.d, all, NBLK);
	kv1t_pair_close(&x);
}

/* PDKV_KV1_RECV_HOLD_MAX_BLOCKS=NREQ: with one receive's blocks held, the next receive waits
 * for room until its receive timeout and is refused before it sends anything; the destroy
 * drops the hold (ASan: no leak). */
static void test_cap(void **state)
{
	struct kv1t_pair x;
	int64_t di[NREQ], d2[NREQ];
	char err[512];
	struct kv1_stats st;
	(void)state;

	setenv("PDKV_KV1_RECV_HOLD_MAX_BLOCKS", "8", 1);
	open_pair(&x, 60, 0, 1000);
	unsetenv("PDKV_KV1_RECV_HOLD_MAX_BLOCKS");
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	assert_int_equal(kv1_alloc(x.d, NREQ, d2), 0);
	assert_int_equal(pull(&x, "xfer-none", di, err, sizeof(err)), -ETIMEDOUT);
	assert_int_equal(pull(&x, "xfer-2", d2, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "PDKV_KV1_RECV_HOLD_MAX_BLOCKS"));
	st = kv1t_stats(x.d);
	assert_int_equal(st.recv_holds, 1);
	assert_int_equal(st.recvs_refused, 1);
	assert_int_equal(st.recv_held_blocks, NREQ);
	kv1_free(x.d, d2, NREQ);
	kv1_free(x.d, di, NREQ);
	kv1t_pair_close(&x);
}

/* Receives P can no longer write into hold nothing: the handshake never sent (engine id unknown
 * to the bootstrap server) or answered "Timeout waiting for P side ready." (abort_timeout_s 1,
 * the decode waits longer). A bad PDKV_KV1_RECV_HOLD_S fails the create. */
static void test_no_hold(void **state)
{
	struct kv1t_pair x;
	int64_t di[NREQ];
	char err[512];
	struct kv1_opts o = {0};
	struct kv1_worker *w = NULL;
	(void)state;

	open_pair(&x, 1, 0, 3000); /* P's 1 s wait for its prefill answers first */
	assert_int_equal(kv1_alloc(x.d, NREQ, di), 0);
	assert_int_equal(
	    kv1_recv_b(x.d, x.boot, "engine-nope", "t", "t", di, NREQ, err, sizeof(err)), -ENOENT);
	assert_int_equal(pull(&x, "xfer-none", di, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Timeout waiting for P side ready."));
	assert_int_equal(kv1t_stats(x.d).recv_holds, 0);
	kv1_free(x.d, di, NREQ);
	kv1t_pair_close(&x);
	o.gen = CFG_GEN_B0;
	o.protocol = "tcp";
	o.tp_size = 1;
	o.nbufs = NBUFS;
	o.block_len = BLEN;
	o.num_blocks = NBLK;
	setenv("PDKV_KV1_RECV_HOLD_S", "0", 1);
	assert_int_equal(kv1_worker_create(&o, &w, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "PDKV_KV1_RECV_HOLD_S"));
	unsetenv("PDKV_KV1_RECV_HOLD_S");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_timeout_holds_blocks),
	    cmocka_unit_test(test_gen_a),
	    cmocka_unit_test(test_deadline),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_no_hold),
	};

	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
