/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the fake model (mdl): tokenizer round trip, the default geometry's KV size,
 * determinism, causality of the KV, sharding, and that one changed KV byte changes the text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/mdl.h"
#include "pd_util.h"

static void test_tokenizer_round_trip(void **state)
{
	const char txt[] = "San Francisco is a \xe5\x9f\x8e\xe5\xb8\x82\n\t!";
	int64_t *ids;
	size_t n, len;
	char *back;
	int64_t bad[2] = {65, 300};
	(void)state;

	assert_int_equal(mdl_tokenize(txt, sizeof(txt) - 1, &ids, &n), 0);
	assert_int_equal(n, sizeof(txt) - 1);
	assert_int_equal(ids[0], 'S');
	assert_int_equal(ids[19], 0xe5);
	assert_int_equal(mdl_detokenize(ids, n, &back, &len), 0);
	assert_int_equal(len, n);
	assert_memory_equal(back, txt, n);
	free(back);
	ids[1] = MDL_EOS; /* EOS detokenizes to nothing */
	assert_int_equal(mdl_detokenize(ids, n, &back, &len), 0);
	assert_int_equal(len, n - 1);
	free(back);
	free(ids);
	assert_int_equal(mdl_detokenize(bad, 2, &back, &len), -EINVAL);
}

static void test_chat_template(void **state)
{
	struct mdl_msg m[2] = {{"system", "Be brief."}, {"user", "Hi"}};
	char *s = mdl_chat_template(m, 2);
	(void)state;

	assert_non_null(s);
	assert_string_equal(s, "<|im_start|>system\nBe brief.<|im_end|>\n"
	                       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
	free(s);
}

static void test_geometry(void **state)
{
	struct mdl_geom g;
	char err[128];
	(void)state;

	mdl_geom_default(&g);
	assert_int_equal(mdl_kv_bytes_per_token(&g, g.kv_heads), 57344);
	assert_int_equal(mdl_geom_check(&g, err, sizeof(err)), 0);
	g.dtype_bytes = 3;
	assert_int_equal(mdl_geom_check(&g, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "got 3"));
}

static uint64_t text_seed(const struct mdl_geom *g, const struct mdl_kv *kv)
{
	return mdl_kv_checksum(kv->keys, kv->values, kv->bytes_each, g->layers,
	                       (size_t)g->head_dim * (size_t)g->dtype_bytes);
}

static void gen_text(uint64_t seed, char *out, size_t n)
{
	struct mdl_gen gs;
	size_t k = 0;

	mdl_gen_init(&gs, seed, true);
	while (k < n - 1)
		out[k++] = (char)mdl_gen_next(&gs);
	out[k] = 0;
}

static void test_kv_size_and_determinism(void **state)
{
	struct mdl_geom g;
	int64_t *ids;
	size_t n;
	struct mdl_kv a, b;
	uint64_t sum, nt;
	uint32_t sh, nsh;
	char ta[65], tb[65];
	(void)state;

	mdl_geom_default(&g);
	assert_int_equal(mdl_tokenize("San Francisco is a", 18, &ids, &n), 0);
	assert_int_equal(mdl_kv_compute(&g, ids, n, 0, g.kv_heads, 0, 1, &a), 0);
	assert_int_equal(mdl_kv_compute(&g, ids, n, 0, g.kv_heads, 0, 1, &b), 0);
	assert_int_equal(a.bytes_each * 2, 57344 * n);
	assert_int_equal(a.hidden_bytes, n * 3584 * 2);
	assert_memory_equal(a.keys, b.keys, a.bytes_each);
	assert_memory_equal(a.values, b.values, a.bytes_each);
	assert_memory_equal(a.hidden, b.hidden, a.hidden_bytes);
	assert_memory_not_equal(a.keys, a.values, a.bytes_each);
	assert_int_equal(mdl_footer_read(a.hidden, a.hidden_bytes, &sum, &nt, &sh, &nsh), 0);
	assert_int_equal(sum, text_seed(&g, &a));
	assert_int_equal(nt, n);
	assert_int_equal(sh, 0);
	assert_int_equal(nsh, 1);
	gen_text(text_seed(&g, &a), ta, sizeof(ta));
	gen_text(text_seed(&g, &b), tb, sizeof(tb));
	assert_string_equal(ta, tb);
	mdl_kv_free(&a);
	mdl_kv_free(&b);
	free(ids);
}

/* One byte anywhere in keys or values changes the checksum and hence the generated text. */
static void test_one_byte_changes_text(void **state)
{
	struct mdl_geom g;
	int64_t ids[5] = {'h', 'e', 'l', 'l', 'o'};
	struct mdl_kv a;
	char t0[65], t1[65];
	size_t pos[4];
	(void)state;

	mdl_geom_default(&g);
	assert_int_equal(mdl_kv_compute(&g, ids, 5, 0, g.kv_heads, 0, 1, &a), 0);
	gen_text(text_seed(&g, &a), t0, sizeof(t0));
	pos[0] = 0;
	pos[1] = a.bytes_each / 2 + 3;
	pos[2] = a.bytes_each - 1;
	pos[3] = 777;
	for (int i = 0; i < 4; i++) {
		uint8_t *p = (i % 2) ? a.values : a.keys;

		p[pos[i]] ^= 0x01;
		gen_text(text_seed(&g, &a), t1, sizeof(t1));
		assert_string_not_equal(t0, t1);
		p[pos[i]] ^= 0x01;
		gen_text(text_seed(&g, &a), t1, sizeof(t1));
		assert_string_equal(t0, t1);
	}
	mdl_kv_free(&a);
}

/* Causal: a shared prefix yields identical rows; a different token changes later rows. */
static void test_causal_prefix(void **state)
{
	struct mdl_geom g = {2, 2, 8, 2, 16};
	int64_t x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 9, 4};
	struct mdl_kv a, b;
	size_t row = 8 * 2 * 2; /* heads * head_dim * dtype */
	(void)state;

	assert_int_equal(mdl_kv_compute(&g, x, 4, 0, 2, 0, 1, &a), 0);
	assert_int_equal(mdl_kv_compute(&g, y, 4, 0, 2, 0, 1, &b), 0);
	for (int l = 0; l < 2; l++) {
		const uint8_t *ka = a.keys + (size_t)l * 4 * row,
		              *kb = b.keys + (size_t)l * 4 * row;

		assert_memory_equal(ka, kb, 2 * row);
		assert_memory_not_equal(ka + 2 * row, kb + 2 * row, row);
		assert_memory_not_equal(ka + 3 * row, kb + 3 * row, row);
	}
	mdl_kv_free(&a);
	mdl_kv_free(&b);
}

/* Head shards (TP) placed back together equal the full KV. */
static void test_shards(void **state)
{
	struct mdl_geom g = {3, 4, 16, 2, 16};
	int64_t ids[7] = {10, 20, 30, 40, 50, 60, 70};
	struct mdl_kv full, s0, s1;
	uint8_t *k, *v;
	uint64_t sum, nt;
	uint32_t sh, nsh;
	(void)state;

	assert_int_equal(mdl_kv_compute(&g, ids, 7, 0, 4, 0, 1, &full), 0);
	assert_int_equal(mdl_kv_compute(&g, ids, 7, 0, 2, 0, 2, &s0), 0);
	assert_int_equal(mdl_kv_compute(&g, ids, 7, 2, 2, 1, 2, &s1), 0);
	assert_int_equal(mdl_footer_read(s1.hidden, s1.hidden_bytes, &sum, &nt, &sh, &nsh), 0);
	assert_int_equal(sh, 1);
	assert_int_equal(nsh, 2);
	assert_int_equal(sum, text_seed(&g, &s1));
	k = calloc(1, full.bytes_each);
	v = calloc(1, full.bytes_each);
	mdl_kv_place_shard(&g, 7, s0.keys, 0, 2, k);
	mdl_kv_place_shard(&g, 7, s1.keys, 2, 2, k);
	mdl_kv_place_shard(&g, 7, s0.values, 0, 2, v);
	mdl_kv_place_shard(&g, 7, s1.values, 2, 2, v);
	assert_memory_equal(k, full.keys, full.bytes_each);
	assert_memory_equal(v, full.values, full.bytes_each);
	mdl_kv_free(&s0);
	assert_int_equal(mdl_kv_compute(&g, ids, 7, 3, 2, 0, 1, &s0), -EINVAL);
	free(k);
	free(v);
	mdl_kv_free(&full);
	mdl_kv_free(&s1);
}

static void test_generation_eos_and_pace(void **state)
{
	struct mdl_gen gs;
	int eos = 0;
	uint64_t t0;
	(void)state;

	/* Over many seeds, EOS shows up (about 1/256 per token) and everything else is printable;
	 * never as the first token. */
	for (uint64_t s = 0; s < 200; s++) {
		mdl_gen_init(&gs, s, false);
		for (int i = 0; i < 64 && !gs.done; i++) {
			int64_t t = mdl_gen_next(&gs);

			if (t == MDL_EOS)
				eos++;
			else
				assert_true(t >= ' ' && t < 127);
			if (i == 0)
				assert_true(t != MDL_EOS);
		}
	}
	assert_true(eos > 0);
	for (uint64_t s = 0; s < 20000; s++) {
		mdl_gen_init(&gs, s, false);
		assert_true(mdl_gen_next(&gs) != MDL_EOS);
	}
	t0 = pd_now_ns();
	mdl_pace(t0, 1000000, 20); /* 20 ms */
	assert_true(pd_now_ns() - t0 >= 20000000ULL);
}

/* The streaming hash and the row functions give mdl_hash64 / mdl_kv_compute's bytes exactly,
 * whatever the piece sizes. */
static void test_streaming_equals_one_shot(void **state)
{
	(void)state;
	size_t n = 4099;
	uint8_t *buf = malloc(n);

	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t len = 0; len < n; len = len * 2 + 13)
		for (size_t piece = 1; piece <= 97; piece += 24) {
			struct mdl_h64 h;

			mdl_h64_init(&h, 42);
			for (size_t off = 0; off < len; off += piece)
				mdl_h64_update(&h, buf + off,
				               off + piece > len ? len - off : piece);
			assert_true(mdl_h64_final(&h) == mdl_hash64(buf, len, 42));
		}
	free(buf);

	struct mdl_geom g;
	struct mdl_kv kv;
	int64_t tok[37];
	uint64_t pre[37];
	uint8_t row[512];

	mdl_geom_default(&g);
	g.layers = 3;
	for (int i = 0; i < 37; i++)
		tok[i] = i * 5 % 256;
	assert_int_equal(mdl_kv_compute(&g, tok, 37, 1, 2, 0, 1, &kv), 0);
	mdl_kv_prefix(tok, 37, pre);
	size_t rb = (size_t)g.head_dim * (size_t)g.dtype_bytes;
	for (int l = 0; l < 3; l++)
		for (size_t t = 0; t < 37; t++)
			for (int h = 0; h < 2; h++) {
				size_t off = (((size_t)l * 37 + t) * 2 + (size_t)h) * rb;

				mdl_kv_row(&g, pre[t], l, 1 + h, false, row);
				assert_memory_equal(row, kv.keys + off, rb);
				mdl_kv_row(&g, pre[t], l, 1 + h, true, row);
				assert_memory_equal(row, kv.values + off, rb);
			}
	mdl_kv_free(&kv);
}

/* A part's sum of rows the model wrote equals its O(1) form from the rows' two words, for rows
 * of any length (whole words or not), fed as one piece or row by row; and it changes when a
 * bit flips, two rows swap or a row is left unwritten. */
static void test_row_sum(void **state)
{
	static const int dims[][2] = {{1, 1},  {3, 1},   {5, 2},   {4, 2}, {7, 4},
	                              {64, 2}, {128, 2}, {129, 1}, {33, 4}};
	uint8_t *rows = malloc(9 * 512), *copy = malloc(9 * 512);

	(void)state;
	for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++) {
		struct mdl_geom g;
		size_t rb;
		uint64_t ab[9][2], whole, closed, byrow;
		struct mdl_ks ks;

		mdl_geom_default(&g);
		g.head_dim = dims[d][0];
		g.dtype_bytes = dims[d][1];
		rb = (size_t)g.head_dim * (size_t)g.dtype_bytes;
		mdl_ks_init(&ks, 7, rb);
		for (int r = 0; r < 9; r++) {
			mdl_kv_row_ab(0x1234 + (uint64_t)r, r % 3, r, r & 1, &ab[r][0], &ab[r][1]);
			mdl_kv_row_put(&g, ab[r][0], ab[r][1], rows + (size_t)r * rb);
			mdl_ks_affine_row(&ks, ab[r][0], ab[r][1]);
		}
		closed = mdl_ks_final(&ks);
		mdl_ks_init(&ks, 7, rb);
		mdl_ks_update(&ks, rows, 9 * rb);
		whole = mdl_ks_final(&ks);
		mdl_ks_init(&ks, 7, rb);
		for (int r = 0; r < 9; r++)
			mdl_ks_update(&ks, rows + (size_t)r * rb, rb);
		byrow = mdl_ks_final(&ks);
		assert_true(whole == closed);
		assert_true(byrow == closed);
		/* every bit of the first and last rows */
		for (size_t i = 0; i < 9 * rb; i += (i + 1 == rb ? 7 * rb : 1))
			for (int bit = 0; bit < 8; bit++) {
				memcpy(copy, rows, 9 * rb);
				copy[i] ^= (uint8_t)(1u << bit);
				mdl_ks_init(&ks, 7, rb);
				mdl_ks_update(&ks, copy, 9 * rb);
				assert_true(mdl_ks_final(&ks) != closed);
			}
		/* rows 2 and 5 swapped; row 4 never written (zeros) */
		memcpy(copy, rows, 9 * rb);
		memcpy(copy + 2 * rb, rows + 5 * rb, rb);
		memcpy(copy + 5 * rb, rows + 2 * rb, rb);
		mdl_ks_init(&ks, 7, rb);
		mdl_ks_update(&ks, copy, 9 * rb);
		assert_true(mdl_ks_final(&ks) != closed);
		memcpy(copy, rows, 9 * rb);
		memset(copy + 4 * rb, 0, rb);
		mdl_ks_init(&ks, 7, rb);
		mdl_ks_update(&ks, copy, 9 * rb);
		assert_true(mdl_ks_final(&ks) != closed);
		/* another seed is another sum */
		mdl_ks_init(&ks, 8, rb);
		mdl_ks_update(&ks, rows, 9 * rb);
		assert_true(mdl_ks_final(&ks) != closed);
	}
	free(rows);
	free(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tokenizer_round_trip),
	    cmocka_unit_test(test_chat_template),
	    cmocka_unit_test(test_geometry),
	    cmocka_unit_test(test_kv_size_and_determinism),
	    cmocka_unit_test(test_one_byte_changes_text),
	    cmocka_unit_test(test_causal_prefix),
	    cmocka_unit_test(test_shards),
	    cmocka_unit_test(test_generation_eos_and_pace),
	    cmocka_unit_test(test_streaming_equals_one_shot),
	    cmocka_unit_test(test_row_sum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
