/* SPDX-License-Identifier: Apache-2.0 */
/* kv1 with KV-cache groups (HMA, vLLM #41847; mooncake_connector.py @ 00f4240e): one block list
 * per group on the wire, each region written with its own group's blocks (a sliding group's list
 * clipped), P's longer list sending its tail; group count and group index mismatches answered
 * with vLLM's texts. Real TE/TCP and ZMQ over loopback. */
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

#define NBUFS 4 /* layer 0: K, V; layer 1: K, V */
#define BLEN  256
#define NBLK  64

static struct kv1_worker *mk(enum cfg_gen gen, bool producer, const char *boot, int ngroups,
                             const uint8_t *bg, char *err, size_t errsz)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, NBUFS, BLEN, NBLK);
	struct kv1_worker *w = NULL;

	o.engine_id = producer ? "e" : NULL;
	o.bootstrap_url = boot;
	o.abort_timeout_s = 2;
	o.recv_timeout_ms = 10000;
	o.kv_groups = ngroups;
	o.buf_group = bg;
	if (kv1_worker_create(&o, &w, err, errsz))
		return NULL;
	return w;
}

static const uint8_t by_layer[NBUFS] = {0, 0, 1, 1}; /* layer 0 full, layer 1 sliding */

struct hp {
	struct kv1_boot *b;
	char boot[64];
	struct kv1_worker *p, *d;
};

static void up(struct hp *x, enum cfg_gen gen, const uint8_t *dbg)
{
	char err[512];
	int bport;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, kv1_shape_of(gen), &x->b, &bport), 0);
	snprintf(x->boot, sizeof(x->boot), "http://127.0.0.1:%d", bport);
	x->p = mk(gen, true, x->boot, 2, by_layer, err, sizeof(err));
	if (!x->p)
		fail_msg("producer: %s", err);
	x->d = mk(gen, false, NULL, 2, dbg, err, sizeof(err));
	if (!x->d)
		fail_msg("consumer: %s", err);
}

static void down(struct hp *x)
{
	kv1_worker_destroy(x->d);
	kv1_worker_destroy(x->p);
	kv1_boot_stop(x->b);
}

static void fill(struct kv1_worker *w, const int64_t *ids, size_t n)
{
	for (int b = 0; b < NBUFS; b++)
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < BLEN; k++)
				kv1_block(w, b, ids[i])[k] = (uint8_t)(1 + b * 31 + ids[i] * 7 + k);
}

static bool zero(struct kv1_worker *w, int b, int64_t id)
{
	for (int k = 0; k < BLEN; k++)
		if (kv1_block(w, b, id)[k])
			return false;
	return true;
}

/* P holds 5 full-group blocks and 4 sliding ones; D asks for 5 and the last 3 (its window): each
 * layer's buffers get their own group's blocks, P's sliding list sends its last 3, and no
 * buffer is written at another group's block ids. */
static void run_groups(enum cfg_gen gen)
{
	struct hp x;
	int64_t pi[9], di[8];
	size_t pc[2] = {5, 4}, dc[2] = {5, 3};
	char err[512];

	up(&x, gen, by_layer);
	assert_int_equal(kv1_alloc(x.p, 9, pi), 0);
	assert_int_equal(kv1_alloc(x.d, 8, di), 0);
	for (int b = 0; b < NBUFS; b++)
		for (int i = 0; i < 8; i++)
			memset(kv1_block(x.d, b, di[i]), 0, BLEN);
	fill(x.p, pi, 9);
	assert_int_equal(kv1_send_ready_g(x.p, "x", pi, 9, pc, 2), 0);
	assert_int_equal(kv1_recv_b_g(x.d, x.boot, "e", "x", "r", di, 8, dc, 2, err, sizeof(err)),
	                 0);
	for (int i = 0; i < 5; i++) /* group 0: layer 0's buffers */
		for (int b = 0; b < 2; b++) {
			assert_memory_equal(kv1_block(x.d, b, di[i]), kv1_block(x.p, b, pi[i]),
			                    BLEN);
			assert_true(zero(x.d, b + 2, di[i]));
		}
	for (int i = 0; i < 3; i++) /* group 1: layer 1's buffers, P's last 3 of 4 */
		for (int b = 2; b < 4; b++) {
			assert_memory_equal(kv1_block(x.d, b, di[5 + i]),
			                    kv1_block(x.p, b, pi[6 + i]), BLEN);
			assert_true(zero(x.d, b - 2, di[5 + i]));
		}
	down(&x);
}

static void test_bl_groups(void **state)
{
	(void)state;
	run_groups(CFG_GEN_BL);
}

/* b2 and bn carry per-group lists but no layer names: P matches buffers by position. */
static void test_b2_bn_groups(void **state)
{
	(void)state;
	run_groups(CFG_GEN_B2);
	run_groups(CFG_GEN_BN);
}

/* D has fewer sliding blocks' worth on P (P clipped to 2, D asks 3): vLLM's "P num blocks less
 * than D"; D asking with one list where P has two: "KV group count mismatch". */
static void test_group_errors(void **state)
{
	struct hp x;
	int64_t pi[7], di[8];
	size_t pc[2] = {5, 2}, dc[2] = {5, 3}, one[1] = {8};
	char err[512];
	(void)state;

	up(&x, CFG_GEN_BL, by_layer);
	assert_int_equal(kv1_alloc(x.p, 7, pi), 0);
	assert_int_equal(kv1_alloc(x.d, 8, di), 0);
	assert_int_equal(kv1_send_ready_g(x.p, "x", pi, 7, pc, 2), 0);
	assert_int_equal(kv1_recv_b_g(x.d, x.boot, "e", "x", "r", di, 8, dc, 2, err, sizeof(err)),
	                 -EIO);
	assert_non_null(strstr(err, "P num blocks less than D"));
	assert_int_equal(kv1_alloc(x.p, 7, pi), 0);
	assert_int_equal(kv1_send_ready_g(x.p, "y", pi, 7, pc, 2), 0);
	/* D sends one list where P holds two: P's err_reqs with vLLM's text */
	assert_int_equal(kv1_recv_b_g(x.d, x.boot, "e", "y", "r", di, 8, one, 1, err, sizeof(err)),
	                 -EIO);
	assert_non_null(strstr(err, "KV group count mismatch"));
	down(&x);
}

/* D registers its layers in other groups (layer 0's V in group 1): the prefill's alignment
 * refuses with vLLM's group-index text. */
static void test_group_index_mismatch(void **state)
{
	static const uint8_t other[NBUFS] = {0, 1, 0, 1};
	struct hp x;
	int64_t pi[2], di[2];
	size_t c[2] = {1, 1};
	char err[512];
	(void)state;

	up(&x, CFG_GEN_BL, other);
	assert_int_equal(kv1_alloc(x.p, 2, pi), 0);
	assert_int_equal(kv1_alloc(x.d, 2, di), 0);
	assert_int_equal(kv1_send_ready_g(x.p, "x", pi, 2, c, 2), 0);
	assert_int_equal(kv1_recv_b_g(x.d, x.boot, "e", "x", "r", di, 2, c, 2, err, sizeof(err)),
	                 -EIO);
	assert_non_null(strstr(err, "Mooncake registered group index mismatch for "
	                            "model.layers.0.self_attn.attn: producer=0, consumer=1."));
	down(&x);
}

/* Groups need per-group lists on the wire (b2 on) and a group per buffer. */
static void test_create_refuses(void **state)
{
	char err[512];
	(void)state;

	assert_null(mk(CFG_GEN_B1, false, NULL, 2, by_layer, err, sizeof(err)));
	assert_non_null(strstr(err, "from b2 on"));
	assert_null(mk(CFG_GEN_BL, false, NULL, 2, NULL, err, sizeof(err)));
	assert_null(mk(CFG_GEN_BL, false, NULL, 1 + KV1_MAX_KV_GROUPS, by_layer, err, sizeof(err)));
	static const uint8_t bad[NBUFS] = {0, 0, 2, 2};
	assert_null(mk(CFG_GEN_BL, false, NULL, 2, bad, err, sizeof(err)));
	assert_non_null(strstr(err, "group 2 is not below 2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bl_groups),      cmocka_unit_test(test_b2_bn_groups),
	    cmocka_unit_test(test_group_errors),   cmocka_unit_test(test_group_index_mismatch),
	    cmocka_unit_test(test_create_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
