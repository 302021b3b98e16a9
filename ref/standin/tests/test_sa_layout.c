/* SPDX-License-Identifier: Apache-2.0 */
/* test_sa_layout: the stand-in's KV layout per vLLM release (sa_v1_layout.c) and the handshake a
 * Bl decode sends with it, caught by a fake prefill ROUTER and decoded: one region per layer, each
 * name once, block_len = kv_block_len = K part + V part (vLLM's LBHNC registration). */
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

#include <zmq.h>

#include "kv1/kv1.h"
#include "kv1/kv1_boot.h"
#include "standin/sa_v1_layout.h"

#define LAYERS 3
#define PART   (16 * 2 * 64 * 2) /* block_size 16, 2 heads, head_dim 64, 2-byte dtype */

static void test_options(void **st)
{
	struct kv1_opts o = {0};

	(void)st;
	assert_int_equal(sa_v1_layout(false, CFG_GEN_BL, false), SA_KV_HEADS);
	assert_int_equal(sa_v1_layout(false, CFG_GEN_BL, true), SA_KV_JOINED);
	assert_int_equal(sa_v1_layout(false, CFG_GEN_BN, false), SA_KV_SPLIT);
	assert_int_equal(sa_v1_layout(false, CFG_GEN_B0, false), SA_KV_SPLIT);
	assert_int_equal(sa_v1_layout(true, CFG_GEN_BL, false), SA_KV_MLA);
	sa_v1_layout_opts(SA_KV_JOINED, LAYERS, PART, &o);
	assert_int_equal(o.nbufs, LAYERS);
	assert_int_equal(o.layer_bufs, 1);
	assert_int_equal(o.block_len, 2 * PART);
	assert_false(o.mla);
	sa_v1_layout_opts(SA_KV_SPLIT, LAYERS, PART, &o);
	assert_int_equal(o.nbufs, 2 * LAYERS);
	assert_int_equal(o.layer_bufs, 2);
	assert_int_equal(o.block_len, PART);
	sa_v1_layout_opts(SA_KV_MLA, LAYERS, PART, &o);
	assert_int_equal(o.nbufs, LAYERS);
	assert_true(o.mla);
}

/* Head-major (LBHNC) blocks: D rank d of D.tp = 2 holds exactly the bytes of heads d*H/2.. of a
 * P.tp = 1 block at [d x half, + half) of it — the byte range vLLM's heterogeneous-TP plan moves
 * (_compute_sender_transfer_plan) — and the token-major joined block does not. */
static void test_head_slices(void **st)
{
	const size_t bs = 16, H = 4, hrow = 64 * 2, half = bs * (H / 2) * 2 * hrow;
	bool joined_ok = true;

	(void)st;
	assert_int_equal(sa_v1_layout_hstride(SA_KV_HEADS, bs, hrow), bs * 2 * hrow);
	assert_int_equal(sa_v1_layout_hstride(SA_KV_JOINED, bs, hrow), 0);
	for (size_t d = 0; d < 2; d++)
		for (size_t t = 0; t < bs; t++)
			for (size_t h = 0; h < H / 2; h++)
				for (int v = 0; v < 2; v++) {
					size_t p = sa_v1_layout_off(SA_KV_HEADS, bs, H, hrow, v, t,
					                            d * H / 2 + h),
					       q = sa_v1_layout_off(SA_KV_HEADS, bs, H / 2, hrow, v,
					                            t, h);

					assert_int_equal(p, d * half + q);
					assert_true(q + hrow <= half);
					if (sa_v1_layout_off(SA_KV_JOINED, bs, H, hrow, v, t,
					                     d * H / 2 + h) !=
					    d * half + sa_v1_layout_off(SA_KV_JOINED, bs, H / 2,
					                                hrow, v, t, h))
						joined_ok = false;
				}
	assert_false(joined_ok);
	/* a cell is the head's K row, then its V row */
	assert_int_equal(sa_v1_layout_off(SA_KV_HEADS, bs, H, hrow, true, 3, 1),
	                 (1 * bs + 3) * 2 * hrow + hrow);
}

struct pull {
	struct kv1_worker *d;
	const char *boot;
	int64_t ids[2];
	int ret;
	char err[512];
};

static void *pull_main(void *arg)
{
	struct pull *p = arg;

	p->ret = kv1_recv_b(p->d, p->boot, "eng-p", "xfer-1", "cmpl-1-0", p->ids, 2, p->err,
	                    sizeof(p->err));
	return NULL;
}

/* The fake prefill's ROUTER: the handshake's last frame; answers ERROR so the pull ends. */
static size_t take_handshake(void *rt, char *buf, size_t cap)
{
	zmq_msg_t id, m;
	int more = 1, n = 0;
	size_t more_sz = sizeof(more), len = 0;
	struct kv1_xfer_resp r = {KV1_ERROR, false, false, NULL, 0, NULL, 0, "fake prefill"};
	char *out;
	size_t olen;

	zmq_msg_init(&id);
	assert_true(zmq_msg_recv(&id, rt, 0) >= 0);
	while (zmq_getsockopt(rt, ZMQ_RCVMORE, &more, &more_sz) == 0 && more && n++ < 4) {
		zmq_msg_init(&m);
		assert_true(zmq_msg_recv(&m, rt, 0) >= 0);
		len = zmq_msg_size(&m) < cap ? zmq_msg_size(&m) : cap;
		memcpy(buf, zmq_msg_data(&m), len);
		zmq_msg_close(&m);
	}
	assert_int_equal(kv1_xfer_resp_encode(&r, &out, &olen), 0);
	assert_true(zmq_send(rt, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE) >= 0);
	assert_true(zmq_send(rt, out, olen, 0) >= 0);
	free(out);
	zmq_msg_close(&id);
	return len;
}

static void test_joined_handshake(void **st)
{
	struct kv1_opts o = {0};
	struct kv1_boot *b;
	struct kv1_xfer_meta m;
	struct pull p = {0};
	char boot[64], addr[64], err[512], buf[16384];
	size_t len, plen = sizeof(addr);
	int bport, tmo = 10000;
	void *ctx = zmq_ctx_new(), *rt = zmq_socket(ctx, ZMQ_ROUTER);
	pthread_t t;

	(void)st;
	assert_int_equal(zmq_setsockopt(rt, ZMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	assert_int_equal(zmq_bind(rt, "tcp://127.0.0.1:*"), 0);
	assert_int_equal(zmq_getsockopt(rt, ZMQ_LAST_ENDPOINT, addr, &plen), 0);
	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BL, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	assert_int_equal(
	    kv1_boot_register(boot, "eng-p", 0, 0, 0, addr, KV1_SHAPE_BL, 2000, err, sizeof(err)),
	    0);

	o.gen = CFG_GEN_BL;
	o.protocol = "tcp";
	o.tp_size = 1;
	o.abort_timeout_s = 2;
	o.recv_timeout_ms = 10000;
	o.num_blocks = 8;
	o.tp_topology = true;
	sa_v1_layout_opts(sa_v1_layout(false, o.gen, false), LAYERS, PART, &o);
	assert_int_equal(kv1_worker_create(&o, &p.d, err, sizeof(err)), 0);
	assert_int_equal(kv1_alloc(p.d, 2, p.ids), 0);
	p.boot = boot;
	pthread_create(&t, NULL, pull_main, &p);
	len = take_handshake(rt, buf, sizeof(buf));
	pthread_join(t, NULL);
	assert_int_equal(p.ret, -EIO);
	assert_non_null(strstr(p.err, "fake prefill"));

	assert_int_equal(kv1_xfer_meta_decode(buf, len, KV1_SHAPE_BL, &m, err, sizeof(err)), 0);
	assert_int_equal(m.nbases, LAYERS);
	assert_int_equal(m.nblock_lens, LAYERS);
	assert_int_equal(m.nkv_block_lens, LAYERS);
	assert_int_equal(m.nlayer_names, LAYERS);
	assert_int_equal(m.nlayer_indices, LAYERS);
	assert_int_equal(m.ngroup_indices, LAYERS);
	for (size_t i = 0; i < m.nbases; i++) {
		char want[64];

		snprintf(want, sizeof(want), "model.layers.%zu.self_attn.attn", i);
		assert_string_equal(m.layer_names[i], want); /* each layer once, in order */
		assert_int_equal(m.layer_indices[i], (int64_t)i);
		assert_int_equal(m.group_indices[i], 0);
		assert_int_equal(m.block_lens[i], 2 * PART); /* K part + V part */
		assert_int_equal(m.kv_block_lens[i], 2 * PART);
		assert_int_equal(m.bases[i], (uint64_t)(uintptr_t)kv1_block(p.d, (int)i, 0));
	}
	kv1_xfer_meta_free(&m);
	kv1_worker_destroy(p.d);
	kv1_boot_stop(b);
	zmq_close(rt);
	zmq_ctx_term(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_head_slices),
	    cmocka_unit_test(test_joined_handshake),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
