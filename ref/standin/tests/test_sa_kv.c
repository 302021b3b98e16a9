/* SPDX-License-Identifier: Apache-2.0 */
/* test_sa_kv: the stand-in's KV generation and checks (sa_kv_gen, sa_kv_scan, sa_v0hash) give
 * the fake model's checksum (mdl_kv_checksum of mdl_kv_compute's KV) on one thread and on
 * several, for one rank and for two, and a flipped byte is caught. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "standin/sa.h"

#define NTOK  37
#define RB(g) ((size_t)(g).head_dim * (size_t)(g).dtype_bytes)

struct v0map {
	uint8_t *k[SA_MAX_TP], *v[SA_MAX_TP];
	size_t seg;
};

/* V0 layout per rank: [layers][T][heads of the rank][head_dim] */
static uint8_t *v0_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct v0map *m = ud;

	return (value ? m->v[k] : m->k[k]) + ((size_t)l * NTOK + t) * m->seg;
}

static void tokens(int64_t *tok)
{
	for (int i = 0; i < NTOK; i++)
		tok[i] = (i * 37 + 11) % 256;
}

/* The definition, written out: the 2 x layers part sums, combined. */
static void test_checksum_is_parts_combined(void **state)
{
	struct mdl_geom g;
	struct mdl_kv kv;
	int64_t tok[NTOK];
	uint64_t sums[2 * 64];
	size_t each;

	(void)state;
	mdl_geom_default(&g);
	tokens(tok);
	assert_int_equal(mdl_kv_compute(&g, tok, NTOK, 0, g.kv_heads, 0, 1, &kv), 0);
	each = kv.bytes_each / (size_t)g.layers;
	for (int p = 0; p < 2 * g.layers; p++) {
		struct mdl_ks ks;

		mdl_ks_init(&ks, mdl_kv_part_seed(p), RB(g));
		mdl_ks_update(&ks,
		              (p < g.layers ? kv.keys : kv.values) + (size_t)(p % g.layers) * each,
		              each);
		sums[p] = mdl_ks_final(&ks);
	}
	assert_true(mdl_kv_checksum(kv.keys, kv.values, kv.bytes_each, g.layers, RB(g)) ==
	            mdl_kv_combine(sums, 2 * g.layers));
	/* a part's place matters: two parts swapped is another checksum */
	uint64_t t = sums[0];
	sums[0] = sums[1];
	sums[1] = t;
	assert_true(mdl_kv_checksum(kv.keys, kv.values, kv.bytes_each, g.layers, RB(g)) !=
	            mdl_kv_combine(sums, 2 * g.layers));
	mdl_kv_free(&kv);
}

static void gen_and_scan(int nsh, const char *threads)
{
	struct mdl_geom g;
	struct mdl_kv full, sh[SA_MAX_TP];
	struct v0map m;
	struct sa_kvmap map = {v0_seg, &m, NULL, 0};
	int64_t tok[NTOK];
	uint64_t want, seed = 0, seed2 = 0, sums[SA_MAX_TP];
	bool same = false;
	int hs;

	setenv("PDKV_KV_THREADS", threads, 1);
	mdl_geom_default(&g);
	hs = g.kv_heads / nsh;
	m.seg = (size_t)hs * (size_t)g.head_dim * (size_t)g.dtype_bytes;
	tokens(tok);
	assert_int_equal(mdl_kv_compute(&g, tok, NTOK, 0, g.kv_heads, 0, 1, &full), 0);
	want = mdl_kv_checksum(full.keys, full.values, full.bytes_each, g.layers, RB(g));
	for (int k = 0; k < nsh; k++) {
		assert_int_equal(mdl_kv_compute(&g, tok, NTOK, k * hs, hs, k, nsh, &sh[k]), 0);
		m.k[k] = calloc(1, sh[k].bytes_each);
		m.v[k] = calloc(1, sh[k].bytes_each);
		assert_non_null(m.k[k]);
		assert_non_null(m.v[k]);
	}
	assert_int_equal(sa_kv_gen(&g, tok, NTOK, nsh, &map, &seed, sums), 0);
	assert_true(seed == want);
	for (int k = 0; k < nsh; k++) {
		assert_memory_equal(m.k[k], sh[k].keys, sh[k].bytes_each);
		assert_memory_equal(m.v[k], sh[k].values, sh[k].bytes_each);
		assert_true(sums[k] == mdl_kv_checksum(sh[k].keys, sh[k].values, sh[k].bytes_each,
		                                       g.layers, RB(g)));
	}
	/* rows only hashed (the plain stand-in, the expected checksum): the same seed */
	assert_int_equal(sa_kv_gen(&g, tok, NTOK, nsh, NULL, &seed2, NULL), 0);
	assert_true(seed2 == want);
	/* started at low priority, finished by the caller (the V1 decode's expected checksum) */
	struct sa_kvjob *job = sa_kv_gen_start(&g, tok, NTOK, nsh, NULL, true);

	assert_non_null(job);
	seed2 = 0;
	sa_kv_gen_finish(job, &seed2);
	assert_true(seed2 == want);
	assert_null(sa_kv_gen_start(&g, tok, 0, nsh, NULL, true));
	assert_int_equal(sa_kv_scan(&g, tok, NTOK, nsh, &map, &seed2, &same), 0);
	assert_true(seed2 == want);
	assert_true(same);
	/* one byte of the last layer's values on the last rank */
	m.v[nsh - 1][sh[nsh - 1].bytes_each - 3] ^= 0x10;
	assert_int_equal(sa_kv_scan(&g, tok, NTOK, nsh, &map, &seed2, &same), 0);
	assert_false(same);
	assert_true(seed2 != want);
	assert_int_equal(sa_kv_scan(&g, tok, NTOK, nsh, &map, &seed, NULL), 0);
	assert_true(seed == seed2);
	for (int k = 0; k < nsh; k++) {
		free(m.k[k]);
		free(m.v[k]);
		mdl_kv_free(&sh[k]);
	}
	mdl_kv_free(&full);
	unsetenv("PDKV_KV_THREADS");
}

static void test_gen_scan_one_rank_one_thread(void **state)
{
	(void)state;
	gen_and_scan(1, "1");
}

static void test_gen_scan_two_ranks_threads(void **state)
{
	(void)state;
	gen_and_scan(2, "3");
	gen_and_scan(1, "8");
}

static struct kvc_tensor tensor(void *data, size_t n)
{
	struct kvc_tensor t = {.ndim = 4, .data = data, .nbytes = n};

	return t;
}

/* Shows tensor i (data d of n bytes) to h in chunks of c bytes, last chunk first and every
 * other one after, skipping chunk `skip` and showing chunk `twice` again (-1: none). */
static void show(struct sa_v0hash *h, int i, const uint8_t *d, size_t n, size_t c, long skip,
                 long twice)
{
	size_t k = (n + c - 1) / c;

	for (size_t q = 0; q < k; q++) {
		size_t idx = q == 0 ? k - 1 : (q * 7) % (k - 1 ? k - 1 : 1), off = idx * c;

		if ((long)idx == skip)
			continue;
		sa_v0hash_piece(h, i, off, d + off, n - off < c ? n - off : c, n);
		if ((long)idx == twice)
			sa_v0hash_piece(h, i, off, d + off, n - off < c ? n - off : c, n);
	}
}

/* Pieces as the engine's lanes show them: threads taking turns over keys and values at once,
 * 256 KiB pieces offset by a blob header's 48 bytes (every edge cuts a row). */
struct shower {
	struct sa_v0hash *h;
	const uint8_t *k, *v;
	size_t n;
	int t, nt;
};

static void *show_thread(void *arg)
{
	struct shower *a = arg;
	size_t c = 256u << 10, first = c - 48, k = 1 + (a->n - first + c - 1) / c;

	for (size_t q = (size_t)a->t; q < 2 * k; q += (size_t)a->nt) {
		size_t idx = q / 2, off = idx ? first + (idx - 1) * c : 0,
		       len = idx ? (a->n - off < c ? a->n - off : c) : first;
		const uint8_t *d = q % 2 ? a->v : a->k;

		if (off < a->n)
			sa_v0hash_piece(a->h, 2 + (int)(q % 2), off, d + off, len, a->n);
	}
	return NULL;
}

static void test_v0hash_threads(void **state)
{
	struct mdl_geom g;
	struct mdl_kv kv;
	struct sa_v0hash h;
	struct shower a[4];
	pthread_t th[4];
	int64_t tok[NTOK];
	uint64_t sum = 0;

	(void)state;
	mdl_geom_default(&g);
	tokens(tok);
	assert_int_equal(mdl_kv_compute(&g, tok, NTOK, 0, g.kv_heads, 0, 1, &kv), 0);
	assert_true(kv.bytes_each > (1u << 20)); /* several pieces each */
	sa_v0hash_init(&h, g.layers, RB(g));
	for (int rep = 0; rep < 3; rep++) {
		struct kvc_tensor k = tensor(kv.keys, kv.bytes_each),
		                  v = tensor(kv.values, kv.bytes_each);

		sa_v0hash_arrive(&h, 0, NULL);
		for (int t = 0; t < 4; t++) {
			a[t] = (struct shower){&h, kv.keys, kv.values, kv.bytes_each, t, 4};
			assert_int_equal(pthread_create(&th[t], NULL, show_thread, &a[t]), 0);
		}
		for (int t = 0; t < 4; t++)
			pthread_join(th[t], NULL);
		sa_v0hash_arrive(&h, 2, &k);
		sa_v0hash_arrive(&h, 3, &v);
		assert_true(sa_v0hash_get(&h, kv.keys, kv.values, kv.bytes_each, &sum));
		assert_true(sum ==
		            mdl_kv_checksum(kv.keys, kv.values, kv.bytes_each, g.layers, RB(g)));
	}
	sa_v0hash_destroy(&h);
	mdl_kv_free(&kv);
}

/* The V0 decode's hooks: keys and values hashed chunk by chunk in any order, chunk edges cutting
 * rows, give mdl_kv_checksum's value; a chunk missing or shown twice leaves it to the caller. */
static void test_v0hash(void **state)
{
	struct mdl_geom g;
	struct mdl_kv kv;
	struct sa_v0hash h;
	int64_t tok[NTOK];
	uint64_t sum = 0, want;
	/* odd sizes: edges inside rows; a whole layer; one chunk for all */
	size_t chunks[] = {1000, 4096 - 48, 12345, 0, 1u << 30};

	(void)state;
	mdl_geom_default(&g);
	tokens(tok);
	assert_int_equal(mdl_kv_compute(&g, tok, NTOK, 0, g.kv_heads, 0, 1, &kv), 0);
	want = mdl_kv_checksum(kv.keys, kv.values, kv.bytes_each, g.layers, RB(g));
	chunks[3] = kv.bytes_each / (size_t)g.layers;
	sa_v0hash_init(&h, g.layers, RB(g));
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct kvc_tensor k = tensor(kv.keys, kv.bytes_each),
		                  v = tensor(kv.values, kv.bytes_each);

		sa_v0hash_arrive(&h, 0, NULL);
		show(&h, 2, kv.keys, kv.bytes_each, chunks[c], -1, -1);
		sa_v0hash_arrive(&h, 2, &k);
		show(&h, 3, kv.values, kv.bytes_each, chunks[c], -1, -1);
		sa_v0hash_arrive(&h, 3, &v);
		assert_true(sa_v0hash_get(&h, kv.keys, kv.values, kv.bytes_each, &sum));
		assert_true(sum == want);
	}
	for (int bad = 0; bad < 3; bad++) {
		struct kvc_tensor k = tensor(kv.keys, kv.bytes_each),
		                  v = tensor(kv.values, kv.bytes_each);

		sa_v0hash_arrive(&h, 0, NULL);
		show(&h, 2, kv.keys, kv.bytes_each, 5000, -1, -1);
		sa_v0hash_arrive(&h, 2, &k);
		if (bad < 2) /* bad 2: the values' chunks never shown */
			show(&h, 3, kv.values, kv.bytes_each, 5000, bad == 0 ? 3 : -1,
			     bad == 1 ? 2 : -1);
		sa_v0hash_arrive(&h, 3, &v);
		assert_false(sa_v0hash_get(&h, kv.keys, kv.values, kv.bytes_each, &sum));
	}
	/* a flipped byte in the values after they were shown is not what was hashed */
	{
		struct kvc_tensor k = tensor(kv.keys, kv.bytes_each),
		                  v = tensor(kv.values, kv.bytes_each);

		sa_v0hash_arrive(&h, 0, NULL);
		((uint8_t *)kv.values)[777] ^= 1;
		show(&h, 2, kv.keys, kv.bytes_each, 4096, -1, -1);
		sa_v0hash_arrive(&h, 2, &k);
		show(&h, 3, kv.values, kv.bytes_each, 4096, -1, -1);
		sa_v0hash_arrive(&h, 3, &v);
		assert_true(sa_v0hash_get(&h, kv.keys, kv.values, kv.bytes_each, &sum));
		assert_true(sum != want);
		((uint8_t *)kv.values)[777] ^= 1;
	}
	sa_v0hash_destroy(&h);
	mdl_kv_free(&kv);
}

/* sa_kv_diff names the ranges that differ: a zeroed run of rows, and one flipped byte */
static void test_kv_diff(void **state)
{
	struct mdl_geom g;
	struct mdl_kv kv;
	int64_t tok[NTOK];
	char out[600], want[200];
	size_t rb, zero0;

	(void)state;
	mdl_geom_default(&g);
	rb = RB(g);
	tokens(tok);
	assert_int_equal(mdl_kv_compute(&g, tok, NTOK, 0, g.kv_heads, 0, 1, &kv), 0);
	sa_kv_diff(&g, tok, NTOK, 0, g.kv_heads, 0, 1, kv.keys, kv.values, out, sizeof(out));
	assert_string_equal(out, "keys: none differ; values: none differ");
	/* layer 1, token 2, head 1 on: 3 rows of zeros (the rows are not zeros themselves) */
	zero0 = (((size_t)NTOK + 2) * (size_t)g.kv_heads + 1) * rb;
	memset(kv.keys + zero0, 0, 3 * rb);
	kv.values[5 * rb + 7] ^= 0x40;
	sa_kv_diff(&g, tok, NTOK, 0, g.kv_heads, 0, 1, kv.keys, kv.values, out, sizeof(out));
	snprintf(want, sizeof(want), "keys: [%zu, +%zu) zeros layer 1 token 2 head 1", zero0,
	         3 * rb);
	if (!strstr(out, want))
		print_error("got: %s\nwant: %s\n", out, want);
	assert_non_null(strstr(out, want));
	if (!strstr(out, " in 1 range);"))
		print_error("got: %s\n", out);
	assert_non_null(strstr(out, " in 1 range);"));
	snprintf(want, sizeof(want),
	         "values: [%zu, +1) layer 0 token %zu head %zu (1 bytes in 1 range)", 5 * rb + 7,
	         5 / (size_t)g.kv_heads, 5 % (size_t)g.kv_heads);
	if (!strstr(out, want))
		print_error("got: %s\nwant: %s\n", out, want);
	assert_non_null(strstr(out, want));
	mdl_kv_free(&kv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_checksum_is_parts_combined),
	    cmocka_unit_test(test_gen_scan_one_rank_one_thread),
	    cmocka_unit_test(test_gen_scan_two_ranks_threads),
	    cmocka_unit_test(test_v0hash),
	    cmocka_unit_test(test_v0hash_threads),
	    cmocka_unit_test(test_kv_diff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
