/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the connector's engine-free parts: pickle / u64be frames against exact bytes,
 * the tensor blob, SimpleBuffer prefix matching, search order, miss modes, back pressure, pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kvc/kvc_internal.h"
#include "pd_util.h"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	while (h[0] && h[1]) {
		unsigned v;
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

/* expected bytes from CPython 3: pickle.dumps((a, b), protocol=4).hex() */
static const struct {
	uint64_t a, b;
	const char *hex;
} vectors[] = {
    {1, 2, "80049507000000000000004b014b0286942e"},
    {255, 256, "80049508000000000000004bff4d000186942e"},
    {65535, 65536, "8004950b000000000000004dffff4a0000010086942e"},
    {2147483647, 2147483648ull, "8004950f000000000000004affffff7f8a05000000800086942e"},
    {0x7f1234567000ull, 3670016, "80049510000000000000008a0600705634127f4a0000380086942e"},
    {4294967295ull, 9223372036854775808ull,
     "80049515000000000000008a05ffffffff008a0900000000000000800086942e"},
    {UINT64_MAX, 0, "80049510000000000000008a09ffffffffffffffff004b0086942e"},
};

static void test_pickle_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < PD_ARRAY_SIZE(vectors); i++) {
		uint8_t want[KVC_FRAME_MAX], got[KVC_FRAME_MAX];
		size_t wn = unhex(vectors[i].hex, want), gn;
		uint64_t a, b;
		gn = kvc_pickle_tuple2(vectors[i].a, vectors[i].b, got);
		assert_int_equal(gn, wn);
		assert_memory_equal(got, want, wn);
		assert_int_equal(kvc_unpickle_tuple2(want, wn, &a, &b), 0);
		assert_true(a == vectors[i].a);
		assert_true(b == vectors[i].b);
	}
}

static void test_pickle_ack(void **state)
{
	uint8_t want[32], got[KVC_FRAME_MAX], v[KVC_FRAME_MAX];
	size_t wn = unhex("8004950700000000000000430341434b942e", want);
	(void)state;
	assert_int_equal(kvc_pickle_ack(got), wn);
	assert_memory_equal(got, want, wn);
	assert_true(kvc_is_pickled_ack(want, wn));
	assert_false(kvc_is_pickled_ack((const uint8_t *)"ACK", 3));
	size_t n = kvc_pickle_tuple2(1, 2, v);
	assert_false(kvc_is_pickled_ack(v, n));
	want[13] = 'X'; /* b'XCK' */
	assert_false(kvc_is_pickled_ack(want, wn));
}

static void test_pickle_malformed(void **state)
{
	static const char *bad[] = {
	    "",                                                         /* empty */
	    "80049507000000000000004b014b0286942e00",                   /* trailing byte */
	    "80049507000000000000004b014b028694",                       /* truncated, no STOP */
	    "80039507000000000000004b014b0286942e",                     /* protocol 3 */
	    "80049508000000000000004b014b0286942e",                     /* frame length off */
	    "80049509000000000000004b014b024b0387942e",                 /* 3-tuple */
	    "8004950a000000000000004affffffff4b0286942e",               /* BININT -1 */
	    "80049507000000000000008a01ff4b0286942e",                   /* LONG1 -1 */
	    "8004950b000000000000008a0a000000000000000000014b0286942e", /* LONG1 10 bytes */
	    "80049512000000000000008a09ffffffffffffffff014b0086942e",   /* 2^64 + ... */
	    "8004950700000000000000430341434b942e",                     /* b'ACK' as data */
	    "80049507000000000000004b014b0285942e",                     /* TUPLE1 opcode 0x85 */
	    "80049507000000000000004a014b0286942e",                     /* BININT cut short */
	};
	(void)state;
	for (size_t i = 0; i < PD_ARRAY_SIZE(bad); i++) {
		uint8_t b[KVC_FRAME_MAX];
		uint64_t x, y;
		size_t n = unhex(bad[i], b);
		if (kvc_unpickle_tuple2(b, n, &x, &y) != KVC_ERR_PROTOCOL)
			fail_msg("frame %zu (%s) was accepted", i, bad[i]);
	}
	/* protocol 5 (Python 3.14's default) carries the same opcodes: accepted */
	uint8_t b5[KVC_FRAME_MAX];
	uint64_t x, y;
	size_t n5 = unhex("80059507000000000000004b014b0286942e", b5);
	assert_int_equal(kvc_unpickle_tuple2(b5, n5, &x, &y), 0);
	assert_true(x == 1 && y == 2);
	/* an oversized buffer is refused before parsing */
	uint8_t big[KVC_FRAME_MAX + 8] = {0x80, 0x04, 0x95};
	assert_int_equal(kvc_unpickle_tuple2(big, sizeof(big), &x, &y), KVC_ERR_PROTOCOL);
}

static void test_u64be(void **state)
{
	uint8_t b[8];
	uint64_t v;
	(void)state;
	kvc_u64be_put(b, 0x00007f1234567000ull);
	assert_memory_equal(b, "\x00\x00\x7f\x12\x34\x56\x70\x00", 8);
	assert_int_equal(kvc_u64be_get(b, 8, &v), 0);
	assert_true(v == 0x00007f1234567000ull);
	assert_int_equal(kvc_u64be_get(b, 7, &v), KVC_ERR_PROTOCOL);
	assert_int_equal(kvc_u64be_get(b, 9, &v), KVC_ERR_PROTOCOL);
}

static void test_hex(void **state)
{
	char h[200];
	uint8_t b[40];
	(void)state;
	memset(b, 0xab, sizeof(b));
	kvc_hex("\x80\x04\x95", 3, h, sizeof(h));
	assert_string_equal(h, "80 04 95");
	kvc_hex(b, sizeof(b), h, sizeof(h));
	assert_non_null(strstr(h, " ..."));
	kvc_hex(b, 0, h, sizeof(h));
	assert_string_equal(h, "(empty)");
}

static void test_blob_roundtrip(void **state)
{
	struct kvc_tensor t, d;
	int64_t shape[4] = {2, 3, 4, 5};
	uint8_t *blob;
	size_t n;
	(void)state;
	assert_int_equal(kvc_tensor_alloc(&t, KVC_BF16, 4, shape), 0);
	assert_int_equal(t.nbytes, 2 * 3 * 4 * 5 * 2);
	for (size_t i = 0; i < t.nbytes; i++)
		((uint8_t *)t.data)[i] = (uint8_t)(i * 7 + 1);
	n = kvc_blob_size(&t);
	assert_int_equal(n, KVC_BLOB_HDR + t.nbytes);
	blob = malloc(n);
	assert_int_equal(kvc_blob_encode(&t, blob, n), 0);
	assert_memory_equal(blob, "PDKT\x01\x00\x03\x04", 8);
	assert_int_equal(kvc_blob_encode(&t, blob, n - 1), KVC_ERR_PROTOCOL);
	assert_int_equal(kvc_blob_decode(blob, n, &d), 0);
	assert_int_equal(d.dtype, KVC_BF16);
	assert_int_equal(d.ndim, 4);
	assert_memory_equal(d.shape, shape, sizeof(shape));
	assert_int_equal(d.nbytes, t.nbytes);
	assert_memory_equal(d.data, t.data, t.nbytes);
	kvc_tensor_free(&d);

	/* corruptions */
	struct {
		size_t off;
		uint8_t val;
	} bad[] = {{0, 'X'}, {4, 2}, {6, 9}, {7, 0}, {7, 5}, {8, 3}, {15, 0x80}, {40, 0x11}};
	for (size_t i = 0; i < PD_ARRAY_SIZE(bad); i++) {
		uint8_t save = blob[bad[i].off];
		blob[bad[i].off] = bad[i].val;
		if (kvc_blob_decode(blob, n, &d) != KVC_ERR_PROTOCOL)
			fail_msg("corruption %zu (byte %zu = 0x%02x) accepted", i, bad[i].off,
			         bad[i].val);
		blob[bad[i].off] = save;
	}
	assert_int_equal(kvc_blob_decode(blob, n - 1, &d), KVC_ERR_PROTOCOL);
	assert_int_equal(kvc_blob_decode(blob, 10, &d), KVC_ERR_PROTOCOL);
	/* a nonzero dim past ndim */
	blob[7] = 3;
	assert_int_equal(kvc_blob_decode(blob, n, &d), KVC_ERR_PROTOCOL);
	free(blob);
	kvc_tensor_free(&t);

	/* a shape whose size overflows */
	uint8_t hdr[KVC_BLOB_HDR] = "PDKT\x01\x00\x01\x02";
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = hdr[16 + i] = 0xff;
	hdr[15] = hdr[23] = 0x3f;
	assert_int_equal(kvc_blob_decode(hdr, sizeof(hdr), &d), KVC_ERR_PROTOCOL);
}

static void test_blob_none(void **state)
{
	uint8_t b[KVC_BLOB_HDR + 8];
	struct kvc_tensor d, one;
	int64_t s1[1] = {1};
	(void)state;
	assert_int_equal(kvc_blob_size(NULL), sizeof(b));
	assert_int_equal(kvc_blob_encode(NULL, b, sizeof(b)), 0);
	assert_int_equal(b[6], KVC_I64);
	assert_int_equal(b[7], 1);
	int64_t v;
	memcpy(&v, b + KVC_BLOB_HDR, 8);
	assert_true(v == -150886311LL);
	assert_int_equal(kvc_blob_decode(b, sizeof(b), &d), 0);
	assert_true(kvc_tensor_is_none(&d));
	assert_null(d.data);
	/* a real one-element tensor with another value is not None */
	assert_int_equal(kvc_tensor_alloc(&one, KVC_I64, 1, s1), 0);
	((int64_t *)one.data)[0] = 0;
	assert_int_equal(kvc_blob_encode(&one, b, sizeof(b)), 0);
	assert_int_equal(kvc_blob_decode(b, sizeof(b), &d), 0);
	assert_false(kvc_tensor_is_none(&d));
	kvc_tensor_free(&d);
	kvc_tensor_free(&one);
}

static void test_match_rules(void **state)
{
	int64_t p[] = {1, 2, 3}, d4[] = {1, 2, 3, 4}, d2[] = {1, 2}, x[] = {1, 9, 3};
	uint8_t all3[] = {1, 1, 1}, m3[] = {1, 0, 1}, none3[] = {0, 0, 0};
	(void)state;
	assert_int_equal(kvc_match_len(p, all3, 3, p, NULL, 3), 3);
	/* docs/vllm-v0.md prefix hazard: a prefix with a different length still matches (min(len) =
	 * 3) */
	assert_int_equal(kvc_match_len(p, all3, 3, d4, NULL, 4), 3);
	assert_int_equal(kvc_match_len(p, all3, 3, d2, NULL, 2), 2);
	assert_int_equal(kvc_match_len(p, all3, 3, x, NULL, 3), 0);
	/* roi masks are applied before comparing: [1,_,3] vs [1,9,3] masked the same */
	assert_int_equal(kvc_match_len(p, m3, 3, x, m3, 3), 2);
	/* masked sender [1,3] vs receiver [1,9,3]: 3 != 9 */
	assert_int_equal(kvc_match_len(p, m3, 3, x, NULL, 3), 0);
	/* min(len) must be > 0 */
	assert_int_equal(kvc_match_len(p, all3, 3, p, NULL, 0), 0);
	assert_int_equal(kvc_match_len(p, none3, 3, p, NULL, 3), 0);
}

static void make_item(struct kvc_item *it, const int64_t *tok, int n, size_t kv_bytes)
{
	int64_t s[1] = {n}, sk[1] = {(int64_t)kv_bytes};
	memset(it, 0, sizeof(*it));
	assert_int_equal(kvc_tensor_alloc(&it->tokens, KVC_I64, 1, s), 0);
	memcpy(it->tokens.data, tok, (size_t)n * 8);
	assert_int_equal(kvc_tensor_alloc(&it->roi, KVC_BOOL, 1, s), 0);
	memset(it->roi.data, 1, (size_t)n);
	assert_int_equal(kvc_tensor_alloc(&it->keys, KVC_U8, 1, sk), 0);
	memset(it->keys.data, (int)tok[0], kv_bytes);
}

static void test_sbuf_order_and_miss(void **state)
{
	struct kvc_sbuf b;
	struct kvc_item a, c, d, out;
	int64_t ta[] = {10, 11}, tc[] = {20, 21}, td[] = {30, 31}, q[] = {30, 31};
	int64_t qa[] = {10}, qz[] = {99};
	uint64_t bytes, items;
	(void)state;
	assert_int_equal(kvc_sbuf_init(&b, 1 << 20, KVC_OVERFLOW_NEW_ESCAPE), 0);
	make_item(&a, ta, 2, 100);
	make_item(&c, tc, 2, 100);
	make_item(&d, td, 2, 100);
	assert_int_equal(kvc_sbuf_insert(&b, &a, 0), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &c, 0), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &d, 0), 0);
	kvc_sbuf_usage(&b, &bytes, &items);
	assert_int_equal(items, 3);
	assert_int_equal(bytes, 3 * (16 + 2 + 100));
	/* BUF-old miss: answered at once */
	assert_int_equal(kvc_sbuf_take(&b, qz, NULL, 1, 0, &out), KVC_MISS);
	/* the failed search rotated the deque three times: order is back to a, c, d */
	assert_int_equal(kvc_sbuf_take(&b, q, NULL, 2, 0, &out), 0);
	assert_memory_equal(out.tokens.data, td, sizeof(td));
	kvc_item_free(&out);
	/* prefix query [10] takes a (min len 1) */
	assert_int_equal(kvc_sbuf_take(&b, qa, NULL, 1, 0, &out), 0);
	assert_memory_equal(out.tokens.data, ta, sizeof(ta));
	assert_int_equal(((uint8_t *)out.keys.data)[99], 10);
	kvc_item_free(&out);
	/* BUF-new with a bound: waits, then answers the miss */
	uint64_t t0 = pd_now_ns();
	assert_int_equal(kvc_sbuf_take(&b, qz, NULL, 1, 120, &out), KVC_MISS);
	assert_true(pd_now_ns() - t0 >= 100 * 1000000ull);
	kvc_sbuf_usage(&b, &bytes, &items);
	assert_int_equal(items, 1);
	kvc_sbuf_close(&b);
	assert_int_equal(kvc_sbuf_take(&b, qz, NULL, 1, -1, &out), KVC_ERR_CLOSED);
	kvc_sbuf_destroy(&b);
	kvc_item_free(&a);
	kvc_item_free(&c);
	kvc_item_free(&d);
}

struct later {
	struct kvc_sbuf *b;
	struct kvc_item *it;
	int delay_ms, rc;
	bool take;
};

static void *later_main(void *arg)
{
	struct later *l = arg;
	pd_sleep_ms(l->delay_ms);
	if (l->take) {
		struct kvc_item out;
		l->rc = kvc_sbuf_take(l->b, l->it->tokens.data, NULL,
		                      (size_t)l->it->tokens.shape[0], 0, &out);
		kvc_item_free(&out);
	} else {
		l->rc = kvc_sbuf_insert(l->b, l->it, 0);
	}
	return NULL;
}

static void test_sbuf_new_waits_for_insert(void **state)
{
	struct kvc_sbuf b;
	struct kvc_item a, out;
	int64_t ta[] = {5, 6, 7};
	pthread_t th;
	struct later l = {.b = &b, .it = &a, .delay_ms = 50};
	(void)state;
	assert_int_equal(kvc_sbuf_init(&b, 1 << 20, KVC_OVERFLOW_NEW_ESCAPE), 0);
	make_item(&a, ta, 3, 10);
	pthread_create(&th, NULL, later_main, &l);
	assert_int_equal(kvc_sbuf_take(&b, ta, NULL, 3, 5000, &out), 0);
	pthread_join(th, NULL);
	assert_int_equal(l.rc, 0);
	assert_memory_equal(out.tokens.data, ta, sizeof(ta));
	kvc_item_free(&out);
	kvc_item_free(&a);
	kvc_sbuf_destroy(&b);
}

static void test_backpressure(void **state)
{
	struct kvc_sbuf b;
	struct kvc_item a, c, big;
	int64_t ta[] = {1}, tc[] = {2}, tb[] = {3};
	pthread_t th;
	struct later l;
	uint64_t bytes, items;
	(void)state;
	/* item size = 8 (token) + 1 (roi) + kv */
	make_item(&a, ta, 1, 591);    /* 600 */
	make_item(&c, tc, 1, 591);    /* 600 */
	make_item(&big, tb, 1, 1991); /* 2000 > threshold */

	/* BUF-new + escape: 600 + 600 > 1000 waits; a take makes room */
	assert_int_equal(kvc_sbuf_init(&b, 1000, KVC_OVERFLOW_NEW_ESCAPE), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &a, 0), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &c, 100), KVC_ERR_TIMEOUT);
	l = (struct later){.b = &b, .it = &a, .delay_ms = 50, .take = true};
	pthread_create(&th, NULL, later_main, &l);
	assert_int_equal(kvc_sbuf_insert(&b, &c, 5000), 0);
	pthread_join(th, NULL);
	assert_int_equal(l.rc, 0);
	kvc_sbuf_usage(&b, &bytes, &items);
	assert_int_equal(bytes, 600);
	/* oversize item: waits while the buffer holds something ... */
	assert_int_equal(kvc_sbuf_insert(&b, &big, 50), KVC_ERR_TIMEOUT);
	kvc_sbuf_destroy(&b);
	/* ... and is accepted into an empty buffer (the escape) */
	assert_int_equal(kvc_sbuf_init(&b, 1000, KVC_OVERFLOW_NEW_ESCAPE), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &big, 50), 0);
	kvc_sbuf_destroy(&b);

	/* BUF-new exactly: an oversize item never fits */
	assert_int_equal(kvc_sbuf_init(&b, 1000, KVC_OVERFLOW_NEW), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &big, 50), KVC_ERR_TIMEOUT);
	kvc_sbuf_destroy(&b);

	/* BUF-old: add while bytes <= threshold, so 600 + 600 goes in; the third waits */
	assert_int_equal(kvc_sbuf_init(&b, 1000, KVC_OVERFLOW_OLD), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &a, 0), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &c, 50), 0);
	assert_int_equal(kvc_sbuf_insert(&b, &big, 50), KVC_ERR_TIMEOUT);
	/* close releases a waiter with CLOSED */
	l = (struct later){.b = &b, .it = &big, .delay_ms = 0};
	pthread_create(&th, NULL, later_main, &l);
	pd_sleep_ms(50);
	kvc_sbuf_close(&b);
	pthread_join(th, NULL);
	assert_int_equal(l.rc, KVC_ERR_CLOSED);
	kvc_sbuf_destroy(&b);

	/* an invalid item is refused */
	assert_int_equal(kvc_sbuf_init(&b, 1000, KVC_OVERFLOW_OLD), 0);
	struct kvc_item bad = a;
	bad.roi.shape[0] = 2;
	assert_int_equal(kvc_sbuf_insert(&b, &bad, 0), KVC_ERR_PROTOCOL);
	kvc_sbuf_destroy(&b);
	assert_int_equal(kvc_sbuf_init(&b, 1000, 7), KVC_ERR_CONFIG);

	kvc_item_free(&a);
	kvc_item_free(&c);
	kvc_item_free(&big);
}

static int n_reg, n_unreg;
static int fake_reg(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
	n_reg++;
	return 0;
}
static int fake_unreg(void *ctx, void *addr)
{
	(void)ctx;
	(void)addr;
	n_unreg++;
	return 0;
}

static void test_pool(void **state)
{
	struct kvc_pool *p;
	void *v[64];
	(void)state;
	assert_int_equal(kvc_pool_default_bytes(1e9), 512ull << 20);
	assert_int_equal(kvc_pool_default_bytes(2e9), 512ull << 20);
	assert_int_equal(kvc_pool_default_bytes(1e6), 64ull << 20);
	assert_int_equal(kvc_pool_default_bytes(1e8), 128ull << 20);
	n_reg = n_unreg = 0;
	assert_int_equal(kvc_pool_create(1 << 20, 4 << 20, fake_reg, fake_unreg, NULL, &p), 0);
	assert_int_equal(n_reg, 1);
	assert_int_equal(kvc_pool_region_bytes(p), 1 << 20);
	/* 128 blocks of 8 KiB fill the region exactly */
	for (int i = 0; i < 64; i++) {
		v[i] = kvc_pool_alloc(p, i % 2 ? 8192 : 1);
		assert_non_null(v[i]);
		memset(v[i], i, 8192);
	}
	assert_int_equal(kvc_pool_in_use(p), 64 * 8192);
	for (int i = 0; i < 64; i++)
		assert_int_equal(((uint8_t *)v[i])[8191], i); /* no overlap */
	void *h = kvc_pool_alloc(p, 512 << 10);               /* the upper half */
	assert_non_null(h);
	assert_int_equal(n_reg, 1);
	/* region full: the next request goes dedicated */
	void *d = kvc_pool_alloc(p, 100);
	assert_non_null(d);
	assert_int_equal(n_reg, 2);
	kvc_pool_free(p, d);
	assert_int_equal(n_unreg, 0); /* kept registered in the cache */
	void *d2 = kvc_pool_alloc(p, 3000);
	assert_ptr_equal(d2, d); /* reused: no second registration */
	assert_int_equal(n_reg, 2);
	kvc_pool_free(p, d2);
	for (int i = 0; i < 64; i += 2)
		kvc_pool_free(p, v[i]);
	/* fragmented: 32 free 8K blocks but no 16K buddy pair -> dedicated (the cached 4 KiB
	 * buffer is too small) */
	d = kvc_pool_alloc(p, 16384);
	assert_non_null(d);
	assert_int_equal(n_reg, 3);
	kvc_pool_free(p, d);
	/* 4090 KiB more would exceed the
	 * 4 MiB cap with the cache, so the cache is evicted first */
	void *e = kvc_pool_alloc(p, 4090 << 10);
	assert_non_null(e);
	assert_int_equal(n_reg, 4);
	assert_int_equal(n_unreg, 2);
	kvc_pool_free(p, e); /* larger than the cache (one region): released at once */
	assert_int_equal(n_unreg, 3);
	for (int i = 1; i < 64; i += 2)
		kvc_pool_free(p, v[i]);
	kvc_pool_free(p, h);
	assert_int_equal(kvc_pool_in_use(p), 0);
	/* everything coalesced back: the whole region is one block again */
	void *all = kvc_pool_alloc(p, 1 << 20);
	assert_non_null(all);
	assert_int_equal(n_reg, 4);
	/* over the dedicated cap -> Allocation Return Error */
	assert_null(kvc_pool_alloc(p, 5 << 20));
	assert_null(kvc_pool_alloc(p, 0));
	kvc_pool_free(p, all);
	kvc_pool_destroy(p);
	assert_int_equal(n_unreg, 4); /* region unregistered at destroy */

	/* a region over 256 MiB is served in 256 MiB top classes; larger is dedicated */
	assert_int_equal(kvc_pool_create(512ull << 20, 1ull << 30, NULL, NULL, NULL, &p), 0);
	void *a = kvc_pool_alloc(p, 256ull << 20), *b = kvc_pool_alloc(p, 256ull << 20);
	void *c = kvc_pool_alloc(p, (256ull << 20) + 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_true((uint8_t *)a + (256ull << 20) == (uint8_t *)b ||
	            (uint8_t *)b + (256ull << 20) == (uint8_t *)a);
	kvc_pool_free(p, a);
	kvc_pool_free(p, b);
	kvc_pool_free(p, c);
	kvc_pool_destroy(p);
}

/* Parked buffers (tensors kept in registered memory): their own cap, next to the pipe's; a freed
 * one is cached and handed out again (warm); the pool outlives its creator while a tensor holds
 * one of its buffers. */
static void test_pool_parked(void **state)
{
	struct kvc_pool *p;
	struct kvc_tensor t;
	int64_t shape[2] = {1024, 256};
	(void)state;
	assert_int_equal(kvc_pool_create(1 << 20, 4 << 20, fake_reg, fake_unreg, NULL, &p), 0);
	kvc_pool_set_cache_cap(p, 4 << 20);
	kvc_pool_set_parked_cap(p, 3 << 20);
	void *a = kvc_pool_alloc_parked(p, 2 << 20);
	assert_non_null(a);
	assert_null(kvc_pool_alloc_parked(p, 2 << 20)); /* over the parked cap: caller mallocs */
	assert_int_equal(kvc_pool_in_use(p), 2 << 20);
	void *w = kvc_pool_alloc(p, 3 << 20); /* the pipe's own cap is untouched */
	assert_non_null(w);
	kvc_pool_free(p, w);
	kvc_pool_free(p, a);
	int reg = n_reg;
	void *b = kvc_pool_alloc_parked(p, (2 << 20) - 100);
	assert_ptr_equal(b, a); /* from the cache: registered and backed already */
	assert_int_equal(n_reg, reg);
	kvc_pool_free(p, b);
	assert_int_equal(kvc_pool_in_use(p), 0);

	assert_int_equal(kvc_tensor_alloc_in(p, &t, KVC_BF16, 2, shape), 0);
	assert_ptr_equal(t.pool, p);
	assert_int_equal(t.nbytes, 1024 * 256 * 2);
	struct kvc_tensor bad;
	assert_int_equal(kvc_tensor_alloc_in(p, &bad, KVC_BF16, 2, (int64_t[]){-1, 2}),
	                 KVC_ERR_PROTOCOL);
	assert_int_equal(kvc_tensor_alloc_in(p, &bad, KVC_BF16, 2, (int64_t[]){4096, 512}),
	                 KVC_ERR_ALLOC);
	assert_null(bad.data);
	kvc_pool_destroy(p); /* t still holds a buffer: the memory stays */
	memset(t.data, 0x5a, t.nbytes);
	kvc_tensor_free(&t); /* the last reference: the pool goes now (ASan: no leak) */
	assert_null(t.data);
	assert_null(t.pool);
}

/* In place: the header written by kvc_blob_encode_header is kvc_blob_encode's, byte for byte,
 * and kvc_blob_decode_inplace points into the blob after the same checks. */
static void test_blob_inplace(void **state)
{
	float v[3] = {1.0f, 2.0f, -3.5f};
	struct kvc_tensor t = {
	    .dtype = KVC_F32, .ndim = 2, .shape = {3, 1}, .data = v, .nbytes = 12};
	struct kvc_tensor d;
	uint8_t a[KVC_BLOB_HDR + 12], b[KVC_BLOB_HDR + 12];
	(void)state;
	assert_int_equal(kvc_blob_encode(&t, a, sizeof(a)), 0);
	memcpy(b + KVC_BLOB_HDR, v, sizeof(v));
	assert_int_equal(kvc_blob_encode_header(&t, b), 0);
	assert_memory_equal(a, b, sizeof(a));
	assert_int_equal(kvc_blob_encode_header(NULL, b), KVC_ERR_PROTOCOL); /* None: copied */
	assert_int_equal(kvc_blob_decode_inplace(b, sizeof(b), &d), 0);
	assert_ptr_equal(d.data, b + KVC_BLOB_HDR);
	assert_null(d.pool);
	assert_int_equal(d.dtype, KVC_F32);
	assert_int_equal(d.ndim, 2);
	assert_int_equal(d.shape[0], 3);
	assert_int_equal(d.nbytes, 12);
	assert_int_equal(kvc_blob_decode_inplace(b, sizeof(b) - 1, &d), KVC_ERR_PROTOCOL);
	assert_null(d.data);
	b[7] = 5; /* ndim */
	assert_int_equal(kvc_blob_decode_inplace(b, sizeof(b), &d), KVC_ERR_PROTOCOL);
	assert_int_equal(kvc_blob_encode(NULL, a, sizeof(a)), 0);
	assert_int_equal(kvc_blob_decode_inplace(a, KVC_BLOB_HDR + 8, &d), 1); /* None */
	assert_int_equal(d.ndim, 0);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(kvc_strerror(KVC_ERR_TRANSFER), "Transfer Return Error");
	assert_string_equal(kvc_strerror(KVC_ERR_ALLOC), "Allocation Return Error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pickle_vectors),
	    cmocka_unit_test(test_pickle_ack),
	    cmocka_unit_test(test_pickle_malformed),
	    cmocka_unit_test(test_u64be),
	    cmocka_unit_test(test_hex),
	    cmocka_unit_test(test_blob_roundtrip),
	    cmocka_unit_test(test_blob_none),
	    cmocka_unit_test(test_match_rules),
	    cmocka_unit_test(test_sbuf_order_and_miss),
	    cmocka_unit_test(test_sbuf_new_waits_for_insert),
	    cmocka_unit_test(test_backpressure),
	    cmocka_unit_test(test_pool),
	    cmocka_unit_test(test_pool_parked),
	    cmocka_unit_test(test_blob_inplace),
	    cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
