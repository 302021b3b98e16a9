/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end tests of the zero-copy hand-off (issue 10): an item generated into the producer's
 * registered memory goes on the wire without a copy and is freed on its ACK; the consumer gets
 * it where it was read, shown tensor by tensor to an arrival hook; the fallbacks (parked memory
 * used up, miss) still behave. Real etcd, two connectors on 127.0.0.1. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "kvc/tests/kvc_testenv.h"
#include "pd_util.h"

/* ref's tensors again, keys, values and hidden allocated with kvc_tensor_alloc_buf(p) */
static void buf_item(struct kvc *p, const struct kvc_item *ref, struct kvc_item *it)
{
	const struct kvc_tensor *src[3] = {&ref->keys, &ref->values, &ref->hidden};
	struct kvc_tensor *dst[3] = {&it->keys, &it->values, &it->hidden};

	memset(it, 0, sizeof(*it));
	assert_int_equal(kvc_tensor_clone(&it->tokens, &ref->tokens), 0);
	assert_int_equal(kvc_tensor_clone(&it->roi, &ref->roi), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
		    kvc_tensor_alloc_buf(p, dst[i], src[i]->dtype, src[i]->ndim, src[i]->shape), 0);
		memcpy(dst[i]->data, src[i]->data, src[i]->nbytes);
	}
}

struct seen {
	int n, idx[8];
	size_t bytes[8];
	size_t piece_bytes[5]; /* chunks shown per answer tensor */
	int piece_late;        /* chunks shown after their tensor's arrival, or outside it */
	const struct kvc_item *ref;
	int piece_wrong; /* chunks whose bytes are not the reference's there */
	/* pieces come from the engine's lane threads as they land (TCP), and from the select's */
	pthread_mutex_t mu;
	pthread_t caller;
	size_t lane_bytes; /* shown on a thread other than the select's */
};

static void piece(void *ud, int i, size_t off, const void *data, size_t len, size_t total)
{
	struct seen *s = ud;
	const struct kvc_tensor *r[5] = {NULL, NULL, &s->ref->keys, &s->ref->values,
	                                 &s->ref->hidden};

	pthread_mutex_lock(&s->mu);
	for (int q = 0; q < s->n && q < 8; q++)
		s->piece_late += s->idx[q] == i;
	if (i < 0 || i > 4 || off + len > total) {
		s->piece_late++;
	} else {
		s->piece_bytes[i] += len;
		if (!pthread_equal(pthread_self(), s->caller))
			s->lane_bytes += len;
		if (r[i] && (total != r[i]->nbytes ||
		             memcmp((const uint8_t *)r[i]->data + off, data, len) != 0))
			s->piece_wrong++;
	}
	pthread_mutex_unlock(&s->mu);
}

static void arrive(void *ud, int i, const struct kvc_tensor *t)
{
	struct seen *s = ud;

	pthread_mutex_lock(&s->mu);
	if (s->n < 8) {
		s->idx[s->n] = i;
		s->bytes[s->n] = t ? t->nbytes : 0;
	}
	s->n++;
	pthread_mutex_unlock(&s->mu);
}

static void wait_pool_idle(struct kvc *c)
{
	struct kvc_stats s;

	for (int i = 0; i < 200; i++) {
		kvc_get_stats(c, &s);
		if (s.pending_acks == 0 && s.pool_bytes_in_use == 0)
			return;
		pd_sleep_ms(10);
	}
	fail_msg("pool still holds %llu bytes after 2 s", (unsigned long long)s.pool_bytes_in_use);
}

/* A hit with every KV tensor in registered memory: byte-exact at the consumer, in place there,
 * the hook sees tokens .. hidden then the end, and the producer's buffers go with the ACKs. */
static void test_zero_copy_hit(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item ref, it, got;
	struct kvc_stats ps, ds;
	struct seen s = {0};
	(void)state;
	env_init(&e);
	p = mk(&e, true, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	d = mk(&e, false, KVC_FRAME_PICKLE, KVC_MISS_OLD, 0, 10000);
	make_item(&ref, 41, 200); /* keys 5.5 MiB: dedicated buffers on both ends */
	buf_item(p, &ref, &it);
	assert_non_null(it.keys.pool);
	assert_non_null(it.hidden.pool);
	kvc_get_stats(p, &ps);
	assert_true(ps.pool_bytes_in_use >= 2 * ref.keys.nbytes + ref.hidden.nbytes);
	assert_int_equal(kvc_insert_move_kv(p, &it), 0);
	assert_null(it.keys.data); /* the buffer owns them now */
	assert_null(it.keys.pool);
	kvc_item_free(&it);

	s.ref = &ref;
	s.caller = pthread_self();
	pthread_mutex_init(&s.mu, NULL);
	setenv("PDKV_KVC_READ_CHUNK", "100000", 1); /* chunk edges inside rows */
	assert_int_equal(kvc_drop_select_pieces(d, ref.tokens.data, 200, &got, arrive, piece, &s),
	                 KVC_OK);
	unsetenv("PDKV_KVC_READ_CHUNK");
	assert_item_eq(&got, &ref);
	/* every chunk of keys, values and hidden shown once, before its tensor, as it is there */
	assert_int_equal(s.piece_bytes[2], ref.keys.nbytes);
	assert_int_equal(s.piece_bytes[3], ref.values.nbytes);
	assert_int_equal(s.piece_bytes[4], ref.hidden.nbytes);
	assert_int_equal(s.piece_late, 0);
	assert_int_equal(s.piece_wrong, 0);
	/* over TCP every byte is shown by the lane that received it, none again by the select */
	assert_int_equal(s.piece_bytes[0], 200 * 8); /* tokens */
	assert_int_equal(s.piece_bytes[1], 200 * 4); /* roi, as float */
	assert_int_equal(s.lane_bytes,
	                 200 * 12 + ref.keys.nbytes + ref.values.nbytes + ref.hidden.nbytes);
	pthread_mutex_destroy(&s.mu);
	assert_non_null(got.keys.pool); /* where the READ put it, no copy */
	assert_int_equal(s.n, 6);
	for (int i = 0; i < 5; i++)
		assert_int_equal(s.idx[i], i);
	assert_int_equal(s.idx[5], -1);
	assert_int_equal(s.bytes[2], ref.keys.nbytes);
	assert_int_equal(s.bytes[4], ref.hidden.nbytes);

	wait_pool_idle(p); /* freed on the ACKs */
	kvc_get_stats(p, &ps);
	kvc_get_stats(d, &ds);
	assert_int_equal(ps.bytes_sent, ds.bytes_received);
	assert_true(ds.pool_bytes_in_use >= 2 * ref.keys.nbytes); /* got holds them */
	assert_int_equal(ps.protocol_errors + ds.protocol_errors, 0);

	/* a warm second round reuses the cached buffers, also for a smaller prompt; its READs go
	 * in 1 MiB chunks of one batch */
	setenv("PDKV_KVC_READ_CHUNK", "1M", 1);
	struct kvc_item ref2;
	make_item(&ref2, 42, 150);
	buf_item(p, &ref2, &it);
	assert_int_equal(kvc_insert_move_kv(p, &it), 0);
	kvc_item_free(&it);
	struct kvc_item got2;
	/* PDKV_KVC_LAND_PIECES=0: every piece shown once all the same, from the select's thread */
	memset(&s, 0, sizeof(s));
	s.ref = &ref2;
	s.caller = pthread_self();
	pthread_mutex_init(&s.mu, NULL);
	setenv("PDKV_KVC_LAND_PIECES", "0", 1);
	assert_int_equal(kvc_drop_select_pieces(d, ref2.tokens.data, 150, &got2, arrive, piece, &s),
	                 KVC_OK);
	unsetenv("PDKV_KVC_LAND_PIECES");
	assert_int_equal(s.piece_bytes[2], ref2.keys.nbytes);
	assert_int_equal(s.piece_bytes[4], ref2.hidden.nbytes);
	assert_int_equal(s.piece_wrong + s.piece_late, 0);
	assert_int_equal(s.lane_bytes, 0);
	pthread_mutex_destroy(&s.mu);
	assert_item_eq(&got2, &ref2);
	kvc_item_free(&got2);
	unsetenv("PDKV_KVC_READ_CHUNK");
	kvc_get_stats(d, &ds);
	assert_int_equal(ds.transfer_failures, 0);

	/* the consumer's tensors outlive it */
	kvc_destroy(d);
	assert_item_eq(&got, &ref);
	kvc_item_free(&got);
	kvc_destroy(p);
	kvc_item_free(&ref);
	kvc_item_free(&ref2);
}

/* parked_bytes used up: kvc_tensor_alloc_buf falls back to malloc and the pipe copies; a miss
 * shows 5 x None to the hook. */
static void test_parked_full_and_miss(void **state)
{
	struct env e;
	struct kvc *p, *d;
	struct kvc_item ref, it, got;
	struct kvc_opts o;
	struct seen s = {0};
	(void)state;
	env_init(&e);
	o = env_opts(&e, true, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 10000);
	o.parked_bytes = 1 << 20;
	p = kt_create(&o);
	d = mk(&e, false, KVC_FRAME_U64BE, KVC_MISS_OLD, 0, 10000);
	make_item(&ref, 43, 100); /* keys 2.8 MiB > 1 MiB parked */
	buf_item(p, &ref, &it);
	assert_null(it.keys.pool);
	assert_int_equal(kvc_insert_move_kv(p, &it), 0);
	kvc_item_free(&it);
	assert_int_equal(kvc_drop_select(d, ref.tokens.data, 100, &got), KVC_OK);
	assert_item_eq(&got, &ref);
	kvc_item_free(&got);

	int64_t unknown[2] = {5, 6};
	assert_int_equal(kvc_drop_select_cb(d, unknown, 2, &got, arrive, &s), KVC_MISS);
	assert_int_equal(s.n, 6);
	for (int i = 0; i < 5; i++)
		assert_int_equal(s.bytes[i], 0); /* None */
	assert_int_equal(s.idx[5], -1);
	wait_pool_idle(p);
	wait_pool_idle(d);
	kvc_destroy(d);
	kvc_destroy(p);
	kvc_item_free(&ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zero_copy_hit),
	    cmocka_unit_test(test_parked_full_and_miss),
	};
	return env_run_tests(tests);
}
