/* SPDX-License-Identifier: Apache-2.0 */
/* PP on the prefill side (vLLM #44528): a prefill of two pipeline stages (two kv1 workers, each
 * registered with its pp_rank and owning half the layers) and a Bl decode of all the layers that
 * pulls from both, byte for byte; a pre-#44528 (Bn) decode gets vLLM's assertion text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv1/kv1.h"
#include "kv1_testlib.h"

#define LAYERS 4
#define BLEN   512
#define NBLK   32

/* A Bl worker with one buffer per layer (LBHNC), layers first .. first + nbufs - 1. */
static struct kv1_worker *mk(enum cfg_gen gen, bool producer, const char *boot, int nbufs,
                             int layer_bufs, int pp_rank, int first)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, nbufs, BLEN, NBLK);

	o.engine_id = producer ? "e" : NULL;
	o.bootstrap_url = boot;
	o.abort_timeout_s = 2;
	o.recv_timeout_ms = 10000;
	o.layer_bufs = layer_bufs;
	o.tp_topology = true;
	o.pp_rank = pp_rank;
	o.pp_size = producer ? 2 : 1;
	o.first_layer = first;
	return kv1t_create(&o);
}

static void fill(struct kv1_worker *w, int nbufs, const int64_t *ids, size_t n, uint8_t salt)
{
	for (int b = 0; b < nbufs; b++)
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < BLEN; k++)
				kv1_block(w, b, ids[i])[k] = (uint8_t)(salt + b * 31 + i * 7 + k);
}

struct pp {
	struct kv1_boot *b;
	char boot[64];
	struct kv1_worker *p[2];
	int64_t pi[2][2];
};

static void pp_up(struct pp *x, const char *key)
{
	int bport;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BL, &x->b, &bport), 0);
	snprintf(x->boot, sizeof(x->boot), "http://127.0.0.1:%d", bport);
	for (int s = 0; s < 2; s++) {
		x->p[s] = mk(CFG_GEN_BL, true, x->boot, LAYERS / 2, 1, s, s * LAYERS / 2);
		assert_int_equal(kv1_alloc(x->p[s], 2, x->pi[s]), 0);
		fill(x->p[s], LAYERS / 2, x->pi[s], 2, (uint8_t)(11 + 50 * s));
		assert_int_equal(kv1_send_ready(x->p[s], key, x->pi[s], 2), 0);
	}
}

static void pp_down(struct pp *x)
{
	for (int s = 0; s < 2; s++)
		kv1_worker_destroy(x->p[s]);
	kv1_boot_stop(x->b);
}

static void test_pp2_prefill(void **state)
{
	struct pp x;
	struct kv1_boot_table t;
	const struct kv1_boot_engine *e;
	struct kv1_worker *d;
	int64_t di[2];
	char err[512];
	(void)state;

	pp_up(&x, "x1");
	/* /query: worker_addr {"0": {"0": stage 0, "1": stage 1}} */
	assert_int_equal(kv1_boot_query(x.boot, 5000, &t, err, sizeof(err)), 0);
	assert_non_null(e = kv1_boot_find(&t, "e"));
	assert_int_equal(e->ntp, 1);
	assert_int_equal(e->npp[0], 2);
	assert_string_equal(e->pp_addr[1], kv1_worker_side_addr(x.p[1]));
	kv1_boot_table_free(&t);
	/* a Bl decode of PP 1 with every layer pulls from both stages */
	d = mk(CFG_GEN_BL, false, NULL, LAYERS, 1, 0, 0);
	assert_int_equal(kv1_alloc(d, 2, di), 0);
	memset(kv1_block(d, 0, di[0]), 0, BLEN);
	assert_int_equal(kv1_recv_b(d, x.boot, "e", "x1", "r1", di, 2, err, sizeof(err)), 0);
	for (int l = 0; l < LAYERS; l++)
		for (int i = 0; i < 2; i++)
			assert_memory_equal(kv1_block(d, l, di[i]),
			                    kv1_block(x.p[l / 2], l % 2, x.pi[l / 2][i]), BLEN);
	kv1_worker_destroy(d);
	pp_down(&x);
}

/* A decode from before #44528 sends no layer names: each stage answers vLLM's assertion. */
static void test_pre_pp_decode(void **state)
{
	struct pp x;
	struct kv1_worker *d;
	int64_t di[2];
	char err[512];
	(void)state;

	pp_up(&x, "x2");
	d = mk(CFG_GEN_BN, false, NULL, 2 * LAYERS, 2, 0, 0);
	assert_int_equal(kv1_alloc(d, 2, di), 0);
	assert_int_equal(kv1_recv_b(d, x.boot, "e", "x2", "r2", di, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Mooncake transfer regions require matching metadata lengths, "
	                            "got base_addrs=8, block_lens=8, kv_block_lens=8, "
	                            "layer_names=0, layer_indices=0."));
	kv1_worker_destroy(d);
	pp_down(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pp2_prefill),
	    cmocka_unit_test(test_pre_pp_decode),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
