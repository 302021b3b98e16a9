/* SPDX-License-Identifier: Apache-2.0 */
/* READs the receiver gave up on while they were in flight (a slow target, the pipe stopping):
 * their late bytes must not land in a buffer handed to a later request. Two real pipes over
 * loopback TCP and a real etcd; the target's engine holds back its answer to the first READ
 * (te_test_set_read_hook) until the test lets it go. The decode engine runs two lanes per peer,
 * so the next READ travels on the other connection and completes while the first is held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvc/tests/kvc_testenv.h"
#include "pd_util.h"
#include "te/te_inspect.h"
#include "te/tests/te_gate.h"

#define NBYTES    100000 /* one 128 KiB pool block per blob */
#define READ_MS   300    /* the decode's READ deadline */
#define HOLD_WAIT 10     /* s: bound on waiting for the target to reach the held READ */

static void open_pair(struct env *e, struct kvc_pipe *p, struct kvc_pipe *d)
{
	struct kvc_opts po, dopts;
	env_init(e);
	po = env_opts(e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	dopts = env_opts(e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 5000);
	dopts.transfer_timeout_ms = READ_MS;
	assert_int_equal(kvc_pipe_open(p, &po), 0);
	assert_int_equal(kvc_pipe_open(d, &dopts), 0);
	/* these cases hold one READ at the target and need it to be the first one: no READ
	 * starts ahead of the one being waited on (test_read_ahead covers that) */
	d->read_ahead = false;
}

static void send_fill(struct kvc_pipe *p, uint8_t fill)
{
	int64_t shape[1] = {NBYTES};
	struct kvc_tensor t;
	assert_int_equal(kvc_tensor_alloc(&t, KVC_U8, 1, shape), 0);
	memset(t.data, fill, NBYTES);
	assert_int_equal(kvc_pipe_send(p, &t, 5000, NULL), 0);
	kvc_tensor_free(&t);
}

/* Every byte of t is fill; else fails naming the first byte that is not. */
static void expect_fill(const struct kvc_tensor *t, uint8_t fill, const char *what)
{
	const uint8_t *b = t->data;
	assert_int_equal(t->nbytes, NBYTES);
	for (size_t i = 0; i < NBYTES; i++)
		if (b[i] != fill)
			fail_msg("%s: byte %zu is 0x%02x, expected 0x%02x (a stale READ landed in "
			         "it)",
			         what, i, b[i], fill);
}

/* A select's piece hook (kvc_drop_select_pieces) on the pipe: bytes shown per fill value. */
struct shown {
	pthread_mutex_t mu;
	size_t bytes[3]; /* 0xa1, 0xb2, 0xc3 */
};

static void count_piece(void *ud, int i, size_t off, const void *data, size_t len, size_t total)
{
	struct shown *s = ud;
	const uint8_t *d = data;
	(void)i;
	(void)off;
	(void)total;
	pthread_mutex_lock(&s->mu);
	for (size_t k = 0; k < len; k++)
		s->bytes[d[k] == 0xa1 ? 0 : d[k] == 0xb2 ? 1 : 2]++;
	pthread_mutex_unlock(&s->mu);
}

/* The READ of the first tensor times out; the second is received (into a buffer the first
 * one's late bytes must not reach); then the first READ's answer is let go and the third READ,
 * behind it on the same connection, completes: the second tensor still holds its bytes, and
 * the held buffer went back to the pool. Before: the timed-out READ's buffer was freed at
 * once, the second tensor got it and was overwritten with the first one's bytes. With a piece
 * hook, the late bytes are not shown to it (its caller has gone), the others are, once. */
static void test_late_read_after_timeout(void **state)
{
	struct env e;
	struct kvc_pipe *p = calloc(1, sizeof(*p)), *d = calloc(1, sizeof(*d));
	struct kvc_tensor t1, t2, t3;
	struct shown sh = {.bytes = {0}};
	(void)state;
	assert_non_null(p);
	assert_non_null(d);
	te_gate_arm(TE_GATE_READ, 1);
	open_pair(&e, p, d);
	pthread_mutex_init(&sh.mu, NULL);
	d->piece_fn = count_piece;
	d->piece_ud = &sh;
	send_fill(p, 0xa1);
	send_fill(p, 0xb2);
	send_fill(p, 0xc3);
	assert_int_equal(kvc_pipe_recv(d, &t1, 5000, NULL), KVC_ERR_TRANSFER);
	if (!te_gate_wait_held(HOLD_WAIT))
		fail_msg("the target never received the first READ");
	assert_int_equal(atomic_load(&d->reads_abandoned), 1);
	assert_int_equal(kvc_read_quar_count(d), 1);
	assert_int_equal(kvc_pipe_recv(d, &t2, 5000, NULL), 0);
	expect_fill(&t2, 0xb2, "second tensor, as read");
	te_gate_release();
	assert_int_equal(kvc_pipe_recv(d, &t3, 5000, NULL), 0); /* after the late answer */
	expect_fill(&t3, 0xc3, "third tensor");
	expect_fill(&t2, 0xb2, "second tensor, after the late READ landed");
	kvc_read_reap(d);
	assert_int_equal(kvc_read_quar_count(d), 0);
	pthread_mutex_lock(&sh.mu);
	assert_int_equal(sh.bytes[0], 0);
	assert_int_equal(sh.bytes[1], NBYTES);
	assert_int_equal(sh.bytes[2], NBYTES);
	pthread_mutex_unlock(&sh.mu);
	kvc_tensor_free(&t2);
	kvc_tensor_free(&t3);
	assert_int_equal(kvc_pool_in_use(d->pool), 0);
	kvc_pipe_close(d);
	kvc_pipe_close(p);
	free(d);
	free(p);
}

struct rcv {
	struct kvc_pipe *d;
	struct kvc_tensor t;
	int rc;
};

static void *rcv_main(void *arg)
{
	struct rcv *r = arg;
	r->rc = kvc_pipe_recv(r->d, &r->t, 5000, NULL);
	return NULL;
}

/* The pipe stops while a READ is held by the target: the receive returns at once, its
 * buffer stays held (out of the pool) and the close frees it after the engine is gone, with
 * the target's answer still not sent. */
static void test_stop_mid_read(void **state)
{
	struct env e;
	struct kvc_pipe *p = calloc(1, sizeof(*p)), *d = calloc(1, sizeof(*d));
	struct rcv r = {.d = d};
	pthread_t th;
	(void)state;
	assert_non_null(p);
	assert_non_null(d);
	te_gate_arm(TE_GATE_READ, 1);
	open_pair(&e, p, d);
	d->transfer_timeout_ms = 60000; /* only the stop ends this READ */
	send_fill(p, 0xd4);
	assert_int_equal(pthread_create(&th, NULL, rcv_main, &r), 0);
	if (!te_gate_wait_held(HOLD_WAIT))
		fail_msg("the target never received the first READ");
	atomic_store(&d->stop, true);
	pthread_join(th, NULL);
	assert_int_equal(r.rc, KVC_ERR_TRANSFER);
	assert_int_equal(kvc_read_quar_count(d), 1);
	assert_true(kvc_pool_in_use(d->pool) >= NBYTES); /* still held, not reusable */
	kvc_pipe_close(d);
	te_gate_release(); /* the answer now goes to a closed connection */
	kvc_pipe_close(p);
	free(d);
	free(p);
}

/* The target answers nothing: KVC_QUAR_MAX READs are abandoned and held, the next one waits
 * its deadline for room and is refused (nothing more is held); once the target answers, the
 * next READ waits for the engine to end a held one and succeeds, and every held buffer goes
 * back to the pool. */
static void test_quarantine_bound(void **state)
{
	struct env e;
	struct kvc_pipe *p = calloc(1, sizeof(*p)), *d = calloc(1, sizeof(*d));
	struct kvc_tensor t;
	(void)state;
	assert_non_null(p);
	assert_non_null(d);
	te_gate_arm(TE_GATE_READ, 1 << 30);
	open_pair(&e, p, d);
	d->transfer_timeout_ms = 100;
	for (int i = 0; i < KVC_QUAR_MAX + 3; i++)
		send_fill(p, (uint8_t)(0x10 + i));
	for (int i = 0; i < KVC_QUAR_MAX; i++)
		assert_int_equal(kvc_pipe_recv(d, &t, 5000, NULL), KVC_ERR_TRANSFER);
	assert_int_equal(kvc_read_quar_count(d), KVC_QUAR_MAX);
	assert_int_equal(kvc_pipe_recv(d, &t, 5000, NULL), KVC_ERR_TRANSFER);
	assert_int_equal(atomic_load(&d->reads_refused), 1);
	assert_int_equal(atomic_load(&d->reads_abandoned), KVC_QUAR_MAX);
	assert_int_equal(kvc_read_quar_count(d), KVC_QUAR_MAX);
	te_gate_release();
	d->transfer_timeout_ms = 5000;
	for (int i = KVC_QUAR_MAX + 1; i < KVC_QUAR_MAX + 3; i++) { /* one on each lane */
		assert_int_equal(kvc_pipe_recv(d, &t, 5000, NULL), 0);
		expect_fill(&t, (uint8_t)(0x10 + i), "READ after the target answered");
		kvc_tensor_free(&t);
	}
	kvc_read_reap(d);
	assert_int_equal(kvc_read_quar_count(d), 0);
	assert_int_equal(kvc_pool_in_use(d->pool), 0);
	te_test_set_read_hook(NULL);
	kvc_pipe_close(d);
	kvc_pipe_close(p);
	free(d);
	free(p);
}

/* Three tensors announced at once: the second and third READs start while the one before them
 * runs (read-ahead), every tensor comes out whole and in order, ACKs in step (the pool empties). A
 * READ started ahead behind a held one gets its full deadline from when it is waited on. */
static void test_read_ahead(void **state)
{
	struct env e;
	struct kvc_pipe *p = calloc(1, sizeof(*p)), *d = calloc(1, sizeof(*d));
	struct kvc_tensor t[3];
	(void)state;
	assert_non_null(p);
	assert_non_null(d);
	te_gate_arm(TE_GATE_READ, 0);
	open_pair(&e, p, d);
	d->read_ahead = true;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++)
			send_fill(p, (uint8_t)(0x30 + 16 * round + i));
		for (int i = 0; i < 3; i++) {
			assert_int_equal(kvc_pipe_recv(d, &t[i], 5000, NULL), 0);
			expect_fill(&t[i], (uint8_t)(0x30 + 16 * round + i), "read ahead");
		}
		for (int i = 0; i < 3; i++)
			kvc_tensor_free(&t[i]);
	}
	assert_true(atomic_load(&d->reads_ahead) >= 2);
	assert_int_equal(kvc_pipe_flush(p, 5000), 0);
	assert_int_equal(kvc_pool_in_use(d->pool), 0);
	kvc_pipe_close(d);
	kvc_pipe_close(p);
	free(d);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_late_read_after_timeout),
	    cmocka_unit_test(test_stop_mid_read),
	    cmocka_unit_test(test_quarantine_bound),
	    cmocka_unit_test(test_read_ahead),
	};
	/* two lanes per peer: the next READ does not queue behind the held one */
	setenv("MC_TCP_LANES_PER_PEER", "2", 1);
	return env_run_tests(tests);
}
