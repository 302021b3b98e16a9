/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end tests of the V0 connector: a prefill (kv_rank 0) and a decode (kv_rank 1) kvc on
 * 127.0.0.1 with identical URLs (+100 rule), TCP engine, metadata in a real etcd; plus a rogue
 * peer on raw ZMQ sockets that checks the wire bytes and feeds malformed / unreadable frames. */
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
#include <unistd.h>
#include <zmq.h>

#include "kvc/tests/kvc_testenv.h"
#include "pd_log.h"
#include "testsvc/pd_svc.h"
#include "pd_util.h"

/* BUF-old over pickle frames: a hit moves the realistic item byte-exactly; a miss is 5 x None. */
static void test_pickle_old_hit_and_miss(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item it, got, other;
	struct kvc_stats ps, ds;
	char want[64];
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	assert_string_equal(kvc_own_url(p), e.url);
	snprintf(want, sizeof(want), "127.0.0.1:%d", e.base + 100);
	assert_string_equal(kvc_own_url(d), want);
	assert_string_equal(kvc_remote_url(d), e.url);

	make_item(&it, 7, T);
	make_item(&other, 8, T);
	assert_int_equal(kvc_insert(p, &it), 0);
	assert_int_equal(kvc_insert(p, &other), 0);
	kvc_get_stats(p, &ps);
	assert_int_equal(ps.buffer_items, 2);
	assert_int_equal(ps.buffer_bytes, 2 * kvc_item_nbytes(&it));

	uint64_t t0 = pd_now_ns();
	assert_int_equal(kvc_drop_select(d, it.tokens.data, T, &got), KVC_OK);
	double ms = (double)(pd_now_ns() - t0) / 1e6;
	assert_item_eq(&got, &it);
	kvc_item_free(&got);
	print_message("    hit (cold): %.1f MiB item in %.1f ms\n",
	              (double)kvc_item_nbytes(&it) / 1048576.0, ms);
	/* warm hits: segment handles cached on both sides */
	t0 = pd_now_ns();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(kvc_insert(p, &it), 0);
		assert_int_equal(kvc_drop_select(d, it.tokens.data, T, &got), KVC_OK);
		assert_item_eq(&got, &it);
		kvc_item_free(&got);
	}
	ms = (double)(pd_now_ns() - t0) / 4e6;
	print_message("    hit (warm): %.1f ms per select (insert + 3 + 5 tensors), %.0f MB/s\n",
	              ms, (double)kvc_item_nbytes(&it) / 1e3 / ms);

	/* miss: unknown tokens -> 5 x None at once */
	int64_t unknown[3] = {1, 2, 3};
	assert_int_equal(kvc_drop_select(d, unknown, 3, &got), KVC_MISS);
	assert_null(got.tokens.data);

	wait_acks(p);
	wait_acks(d);
	kvc_get_stats(p, &ps);
	kvc_get_stats(d, &ds);
	assert_int_equal(ps.hits, 5);
	assert_int_equal(ps.misses, 1);
	assert_int_equal(ds.hits, 5);
	assert_int_equal(ds.misses, 1);
	assert_int_equal(ps.buffer_items, 1);
	assert_int_equal(ds.transfers, 30); /* 5 answers per select */
	assert_int_equal(ps.transfers, 18); /* 3 query tensors per select */
	assert_true(ds.bytes_received >= it.keys.nbytes * 2 + it.hidden.nbytes);
	assert_int_equal(ps.bytes_sent, ds.bytes_received);
	assert_int_equal(ds.bytes_sent, ps.bytes_received);
	assert_int_equal(ps.transfer_failures + ds.transfer_failures, 0);
	assert_int_equal(ps.protocol_errors + ds.protocol_errors, 0);
	assert_int_equal(ps.pool_bytes_in_use, 0);
	assert_int_equal(ds.pool_bytes_in_use, 0);

	t0 = pd_now_ns();
	kvc_destroy(d);
	kvc_destroy(p);
	assert_true(pd_now_ns() - t0 < 3000000000ull);
	kvc_item_free(&it);
	kvc_item_free(&other);
}

struct inserter {
	struct kvc *p;
	struct kvc_item *it;
	int delay_ms, rc;
};

static void *insert_later(void *arg)
{
	struct inserter *in = arg;
	pd_sleep_ms(in->delay_ms);
	in->rc = kvc_insert(in->p, in->it);
	return NULL;
}

/* BUF-new over u64be frames: a select waits for the matching insert; a miss is answered only
 * after the producer's bounded wait; the prefix hazard consumes a longer item. */
static void test_u64be_new_wait_and_miss(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item it, got, seed;
	struct kvc_stats ps;
	pthread_t th;
	struct inserter in;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_U64BE, KVC_MISS_NEW, 400, 10000);
	d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_NEW, 0, 10000);
	make_item(&seed, 1, 4);
	assert_int_equal(kvc_insert(p, &seed), 0); /* starts the handler */

	make_item(&it, 2, T);
	in = (struct inserter){.p = p, .it = &it, .delay_ms = 200};
	pthread_create(&th, NULL, insert_later, &in);
	uint64_t t0 = pd_now_ns();
	assert_int_equal(kvc_drop_select(d, it.tokens.data, T, &got), KVC_OK);
	assert_true(pd_now_ns() - t0 >= 150000000ull); /* it really waited for the insert */
	pthread_join(th, NULL);
	assert_int_equal(in.rc, 0);
	assert_item_eq(&got, &it);
	kvc_item_free(&got);

	/* miss: the producer waits miss_wait_ms (400) and then answers 5 x None */
	int64_t unknown[2] = {42, 43};
	t0 = pd_now_ns();
	assert_int_equal(kvc_drop_select(d, unknown, 2, &got), KVC_MISS);
	assert_true(pd_now_ns() - t0 >= 350000000ull);

	/* docs/vllm-v0.md prefix hazard: asking for a prefix of the 4-token seed item matches it
	 * (min len 2) and hands back the longer item */
	int64_t prefix[2] = {1000, 1001};
	assert_int_equal(kvc_drop_select(d, prefix, 2, &got), KVC_OK);
	assert_int_equal(got.tokens.shape[0], 4);
	kvc_item_free(&got);
	kvc_get_stats(p, &ps);
	assert_int_equal(ps.buffer_items, 0);
	assert_int_equal(ps.hits, 2);
	assert_int_equal(ps.misses, 1);

	kvc_destroy(d);
	kvc_destroy(p);
	kvc_item_free(&it);
	kvc_item_free(&seed);
}

/* A consumer timeout leaves the producer's late answer in flight: the next select reads and
 * drops it, then gets its own item — the pipe's FIFO stays in step. */
static void test_timeout_then_stale_answer(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item a, b, got;
	struct kvc_stats ps;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_NEW, 0, 10000);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_NEW, 0, 300);
	make_item(&a, 3, 8);
	make_item(&b, 4, 8);
	/* before any insert the producer's handler does not exist: the select times out */
	assert_int_equal(kvc_drop_select(d, a.tokens.data, 8, &got), KVC_ERR_TIMEOUT);
	assert_int_equal(kvc_insert(p, &a), 0); /* answers the old query late */
	assert_int_equal(kvc_insert(p, &b), 0);
	assert_int_equal(kvc_drop_select(d, b.tokens.data, 8, &got), KVC_OK);
	assert_item_eq(&got, &b);
	kvc_item_free(&got);
	kvc_get_stats(p, &ps);
	assert_int_equal(ps.buffer_items, 0);
	kvc_destroy(d);
	kvc_destroy(p);
	kvc_item_free(&a);
	kvc_item_free(&b);
}

/* Prefill speaks pickle, decode u64be: both sides reject the other's frames (PROTOCOL, logged
 * with the bytes) and neither hangs. */
static void test_frame_mismatch(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item a, got;
	struct kvc_stats ps, ds;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 1500);
	make_item(&a, 5, 8);
	assert_int_equal(kvc_insert(p, &a), 0);
	int rc = kvc_drop_select(d, a.tokens.data, 8, &got);
	assert_true(rc == KVC_ERR_PROTOCOL || rc == KVC_ERR_TIMEOUT);
	kvc_get_stats(p, &ps);
	kvc_get_stats(d, &ds);
	assert_true(ps.protocol_errors >= 1);
	assert_int_equal(ds.hits, 0);
	uint64_t t0 = pd_now_ns();
	kvc_destroy(d);
	kvc_destroy(p);
	assert_true(pd_now_ns() - t0 < 3000000000ull);
	kvc_item_free(&a);
}

struct selector {
	struct kvc *d;
	int rc;
};

static void *select_main(void *arg)
{
	struct selector *s = arg;
	int64_t tok[3] = {1, 2, 3};
	struct kvc_item got;
	s->rc = kvc_drop_select(s->d, tok, 3, &got);
	kvc_item_free(&got);
	return NULL;
}

static int zrecv1(void *sock, uint8_t *buf, size_t cap, int *more)
{
	zmq_pollitem_t pi = {.socket = sock, .events = ZMQ_POLLIN};
	size_t m = sizeof(*more);
	if (zmq_poll(&pi, 1, 3000) <= 0)
		return -1;
	int n = zmq_recv(sock, buf, cap, ZMQ_DONTWAIT);
	zmq_getsockopt(sock, ZMQ_RCVMORE, more, &m);
	return n;
}

/* Reads one pickled (ptr,len) query frame from the consumer and checks it byte for byte. */
static void expect_query_frame(void *pull, uint64_t want_len)
{
	uint8_t b[256], exp[KVC_FRAME_MAX];
	uint64_t ptr, len;
	int more = 0, n = zrecv1(pull, b, sizeof(b), &more);
	assert_true(n > 0);
	assert_int_equal(more, 0);
	assert_int_equal(kvc_unpickle_tuple2(b, (size_t)n, &ptr, &len), 0);
	assert_int_equal(len, want_len);
	assert_true(ptr != 0 && ptr < (1ull << 47));
	assert_int_equal(kvc_pickle_tuple2(ptr, len, exp), (size_t)n);
	assert_memory_equal(b, exp, (size_t)n);
}

static void expect_ack(void *ack_pull)
{
	uint8_t b[64], want[KVC_FRAME_MAX];
	int more = 0, n = zrecv1(ack_pull, b, sizeof(b), &more);
	assert_int_equal(n, (int)kvc_pickle_ack(want));
	assert_memory_equal(b, want, (size_t)n);
}

/* A rogue prefill on raw ZMQ: the consumer's wire bytes are exactly vLLM's, a garbage frame is
 * refused (PROTOCOL), an unreadable (ptr,len) gives "Transfer Return Error", every consumed
 * frame is ACKed, and shutdown sends the end signal without hanging. */
static void test_rogue_peer(void **state)
{
	struct env e;
	struct kvc *d;
	struct kvc_stats ds;
	struct selector s;
	pthread_t th;
	char a[64];
	uint8_t f[KVC_FRAME_MAX];
	int zero = 0;
	(void)state;
	env_init(&e);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 3000);
	void *ctx = zmq_ctx_new();
	void *push = zmq_socket(ctx, ZMQ_PUSH), *pull = zmq_socket(ctx, ZMQ_PULL);
	void *ack_pull = zmq_socket(ctx, ZMQ_PULL), *ack_push = zmq_socket(ctx, ZMQ_PUSH);
	void *socks[4] = {push, pull, ack_pull, ack_push};
	for (int i = 0; i < 4; i++)
		zmq_setsockopt(socks[i], ZMQ_LINGER, &zero, sizeof(zero));
	/* the prefill end's ports: bind B+9/B+10, connect the decode's B+109/B+110 */
	snprintf(a, sizeof(a), "tcp://127.0.0.1:%d", e.base + 9);
	assert_int_equal(zmq_bind(push, a), 0);
	snprintf(a, sizeof(a), "tcp://127.0.0.1:%d", e.base + 10);
	assert_int_equal(zmq_bind(ack_push, a), 0);
	snprintf(a, sizeof(a), "tcp://127.0.0.1:%d", e.base + 109);
	assert_int_equal(zmq_connect(pull, a), 0);
	snprintf(a, sizeof(a), "tcp://127.0.0.1:%d", e.base + 110);
	assert_int_equal(zmq_connect(ack_pull, a), 0);

	/* 1: garbage answer */
	s = (struct selector){.d = d};
	pthread_create(&th, NULL, select_main, &s);
	expect_query_frame(pull, KVC_BLOB_HDR + 8);     /* signal tensor([0]) */
	expect_query_frame(pull, KVC_BLOB_HDR + 3 * 8); /* tokens int64 [3] */
	expect_query_frame(pull, KVC_BLOB_HDR + 3 * 4); /* roi float [3] */
	uint8_t junk[200] = "\x80\x04garbage";          /* over KVC_FRAME_MAX: refused and logged */
	assert_int_equal(zmq_send(push, junk, sizeof(junk), 0), (int)sizeof(junk));
	pthread_join(th, NULL);
	assert_int_equal(s.rc, KVC_ERR_PROTOCOL);
	expect_ack(ack_pull);

	/* 2: four more answers owed (stale), then the new query's answer: all unreadable */
	s = (struct selector){.d = d};
	pthread_create(&th, NULL, select_main, &s);
	size_t n = kvc_pickle_tuple2(0x10000, 100, f);
	for (int i = 0; i < 4; i++)
		assert_int_equal(zmq_send(push, f, n, 0), (int)n);
	expect_query_frame(pull, KVC_BLOB_HDR + 8);
	expect_query_frame(pull, KVC_BLOB_HDR + 3 * 8);
	expect_query_frame(pull, KVC_BLOB_HDR + 3 * 4);
	assert_int_equal(zmq_send(push, f, n, 0), (int)n);
	pthread_join(th, NULL);
	assert_int_equal(s.rc, KVC_ERR_TRANSFER);
	for (int i = 0; i < 5; i++)
		expect_ack(ack_pull);

	/* 3: an oversized length is refused unread */
	s = (struct selector){.d = d};
	pthread_create(&th, NULL, select_main, &s);
	for (int i = 0; i < 4; i++) /* settle the 4 still owed */
		assert_int_equal(zmq_send(push, f, n, 0), (int)n);
	for (int i = 0; i < 3; i++) {
		uint8_t b[128];
		int more;
		assert_true(zrecv1(pull, b, sizeof(b), &more) > 0);
	}
	n = kvc_pickle_tuple2(0x10000, 1ull << 40, f);
	assert_int_equal(zmq_send(push, f, n, 0), (int)n);
	pthread_join(th, NULL);
	assert_int_equal(s.rc, KVC_ERR_PROTOCOL);
	for (int i = 0; i < 5; i++)
		expect_ack(ack_pull);

	kvc_get_stats(d, &ds);
	assert_int_equal(ds.transfer_failures, 9);
	assert_int_equal(ds.protocol_errors, 2);
	assert_int_equal(ds.transfers, 0);
	assert_int_equal(ds.pool_bytes_in_use > 0, 1); /* 9 query tensors never ACKed by us */

	/* shutdown: the end signal (None sentinel) goes out; the missing ACKs do not block */
	uint64_t t0 = pd_now_ns();
	kvc_destroy(d);
	assert_true(pd_now_ns() - t0 < 3000000000ull);
	uint8_t b[128];
	int more;
	int m = zrecv1(pull, b, sizeof(b), &more);
	uint64_t ptr, len;
	assert_true(m > 0);
	assert_int_equal(kvc_unpickle_tuple2(b, (size_t)m, &ptr, &len), 0);
	assert_int_equal(len, KVC_BLOB_HDR + 8);
	for (int i = 0; i < 4; i++)
		zmq_close(socks[i]);
	zmq_ctx_term(ctx);
}

struct conc {
	struct kvc *d;
	struct kvc_item *want;
	int rc;
	bool same;
};

static void *conc_main(void *arg)
{
	struct conc *c = arg;
	struct kvc_item got;
	c->rc = kvc_drop_select(c->d, c->want->tokens.data, (size_t)c->want->tokens.shape[0], &got);
	c->same = c->rc == KVC_OK && got.keys.nbytes == c->want->keys.nbytes &&
	          memcmp(got.keys.data, c->want->keys.data, got.keys.nbytes) == 0 &&
	          memcmp(got.values.data, c->want->values.data, got.values.nbytes) == 0;
	kvc_item_free(&got);
	return NULL;
}

/* Items larger than the 16 MiB pool (dedicated registrations the consumer has not seen yet)
 * and concurrent drop_select callers on one struct kvc each get their own item. */
static void test_large_and_concurrent(void **state)
{
	enum { N = 4 };
	struct env e;
	struct kvc *p, *d;
	struct kvc_item big, got, items[N];
	struct kvc_stats ps, ds;
	struct conc cs[N];
	pthread_t th[N];
	(void)state;
	env_init(&e);
	e.pool = 4 << 20;
	p = mk(&e, true, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 10000);
	d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 10000);
	make_item(&big, 11, 200); /* keys 5.5 MiB each > 4 MiB pool */
	assert_int_equal(kvc_insert(p, &big), 0);
	uint64_t t0 = pd_now_ns();
	assert_int_equal(kvc_drop_select(d, big.tokens.data, 200, &got), KVC_OK);
	double ms = (double)(pd_now_ns() - t0) / 1e6;
	assert_item_eq(&got, &big);
	kvc_item_free(&got);
	print_message("    large: %.1f MiB item (dedicated buffers) in %.1f ms\n",
	              (double)kvc_item_nbytes(&big) / 1048576.0, ms);

	for (int i = 0; i < N; i++) {
		make_item(&items[i], 20 + i, T);
		assert_int_equal(kvc_insert(p, &items[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		cs[i] = (struct conc){.d = d, .want = &items[N - 1 - i]};
		pthread_create(&th[i], NULL, conc_main, &cs[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(cs[i].rc, KVC_OK);
		assert_true(cs[i].same);
	}
	wait_acks(p);
	wait_acks(d);
	kvc_get_stats(p, &ps);
	kvc_get_stats(d, &ds);
	assert_int_equal(ps.buffer_items, 0);
	assert_int_equal(ds.hits, N + 1);
	assert_int_equal(ps.pool_bytes_in_use, 0); /* dedicated buffers released after the ACKs */
	assert_int_equal(ds.pool_bytes_in_use, 0);
	assert_int_equal(ds.transfer_failures, 0);
	kvc_destroy(d);
	kvc_destroy(p);
	kvc_item_free(&big);
	for (int i = 0; i < N; i++)
		kvc_item_free(&items[i]);
}

/* A second instance on the same ports fails (ZMQ "Address already in use") before it touches
 * the metadata store, so the first keeps working; bad options are refused. */
static void test_port_clash_and_bad_config(void **state)
{
	struct env e;
	struct kvc *p, *p2 = NULL, *d, *x = NULL;
	struct kvc_item it, got;
	struct kvc_opts o;
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	o = (struct kvc_opts){.mc = &e.mc, .kt = &e.kp, .zmq_bind_host = "127.0.0.1"};
	assert_int_equal(kvc_create(&o, &p2), KVC_ERR_CONFIG);
	assert_null(p2);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	make_item(&it, 9, 16);
	assert_int_equal(kvc_insert(p, &it), 0);
	assert_int_equal(kvc_drop_select(d, it.tokens.data, 16, &got), KVC_OK);
	assert_item_eq(&got, &it);
	kvc_item_free(&got);
	/* role checks: insert on the consumer, select on the producer */
	assert_int_equal(kvc_insert(d, &it), KVC_ERR_CONFIG);
	assert_int_equal(kvc_drop_select(p, it.tokens.data, 16, &got), KVC_ERR_CONFIG);
	kvc_destroy(d);
	kvc_destroy(p);

	o.frame_format = 5;
	assert_int_equal(kvc_create(&o, &x), KVC_ERR_CONFIG);
	o.frame_format = KVC_FRAME_PICKLE;
	o.miss_mode = 9;
	assert_int_equal(kvc_create(&o, &x), KVC_ERR_CONFIG);
	o.miss_mode = KVC_MISS_OLD;
	e.mc.prefill_url = "no-port-here";
	assert_int_equal(kvc_create(&o, &x), KVC_ERR_CONFIG);
	e.mc.prefill_url = e.url;
	e.mc.conn_string = NULL;
	assert_int_equal(kvc_create(&o, &x), KVC_ERR_CONFIG);
	assert_null(x);
	kvc_item_free(&it);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pickle_old_hit_and_miss),
	    cmocka_unit_test(test_u64be_new_wait_and_miss),
	    cmocka_unit_test(test_timeout_then_stale_answer),
	    cmocka_unit_test(test_frame_mismatch),
	    cmocka_unit_test(test_large_and_concurrent),
	    cmocka_unit_test(test_port_clash_and_bad_config),
	    cmocka_unit_test(test_rogue_peer),
	};
	return env_run_tests(tests);
}
