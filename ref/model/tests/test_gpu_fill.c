/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_fill: libmdlgpu.so's K/V equal mdl_kv_compute's bytes — several geometries (rows of
 * 8k and odd bytes, head subsets), every byte compared after a poisoned fill. Exits 77 (SKIP)
 * without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpu/mdl_gpu.h"
#include "model/mdl.h"
#include "pd_proc.h"
#include "te/te_gpu.h"

static mdl_gpu_kv_fill_fn kv_fill;

static void one(int layers, int kv_heads, int head_dim, int dtype, int head0, int nheads, size_t n)
{
	struct mdl_geom g = {0};
	struct mdl_kv kv;
	int64_t *tok = malloc(n * sizeof(*tok));
	size_t row = (size_t)head_dim * (size_t)dtype, bytes;
	char *dk = NULL, *dv = NULL, *hk, *hv;

	assert_non_null(tok);
	g.layers = layers;
	g.kv_heads = kv_heads;
	g.head_dim = head_dim;
	g.dtype_bytes = dtype;
	g.hidden_size = 64;
	for (size_t i = 0; i < n; i++)
		tok[i] = (int64_t)((i * 2654435761u) % 50000);
	assert_int_equal(mdl_kv_compute(&g, tok, n, head0, nheads, 0, 1, &kv), 0);
	bytes = kv.bytes_each;
	hk = malloc(bytes);
	hv = malloc(bytes);
	assert_true(hk && hv);
	assert_int_equal(te_gpu_malloc(0, bytes, (void **)&dk), 0);
	assert_int_equal(te_gpu_malloc(0, bytes, (void **)&dv), 0);
	assert_int_equal(te_gpu_memset(0, dk, 0xA5, bytes), 0);
	assert_int_equal(te_gpu_memset(0, dv, 0x5A, bytes), 0);
	assert_int_equal(kv_fill(dk, dv, tok, n, layers, nheads, head0, row, NULL), 0);
	assert_int_equal(te_gpu_copy(0, hk, dk, bytes), 0);
	assert_int_equal(te_gpu_copy(0, hv, dv, bytes), 0);
	if (memcmp(hk, kv.keys, bytes) || memcmp(hv, kv.values, bytes))
		fail_msg("GPU K/V differ from mdl_kv_compute (layers %d, heads %d+%d, row %zu, %zu "
		         "tokens)",
		         layers, head0, nheads, row, n);
	te_gpu_free(dk);
	te_gpu_free(dv);
	free(hk);
	free(hv);
	free(tok);
	mdl_kv_free(&kv);
}

static void test_geometries(void **state)
{
	(void)state;
	one(2, 4, 64, 2, 0, 4, 17);     /* rows of 128 B */
	one(3, 4, 5, 1, 1, 2, 33);      /* 5-byte rows: the byte tail */
	one(28, 4, 128, 2, 0, 4, 1000); /* a real model's geometry, 1000 tokens */
	one(1, 8, 96, 2, 3, 5, 1);      /* one token */
}

static void test_bad_arguments(void **state)
{
	int64_t t = 1;
	(void)state;
	assert_int_equal(kv_fill(NULL, NULL, &t, 1, 1, 1, 0, 8, NULL), -22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_geometries),
	    cmocka_unit_test(test_bad_arguments),
	};
	char why[256] = "", path[4200];
	void *h;

	if (te_gpu_device_count(why, sizeof(why)) <= 0) {
		printf("SKIP: no CUDA device: %s\n", why);
		return 77;
	}
	snprintf(path, sizeof(path), "%s/../lib/libmdlgpu.so", pd_self_dir());
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*(void **)&kv_fill = dlsym(h, "mdl_gpu_kv_fill"))) {
		printf("FAIL: %s: %s\n", path, dlerror());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
