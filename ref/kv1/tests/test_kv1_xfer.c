/* SPDX-License-Identifier: Apache-2.0 */
/* kv1 producer/consumer pairs in one process over loopback TE/TCP and real ZMQ sockets: gen A
 * and gen B (B0, Bn, Bl) transfers verified byte for byte, the gen A unknown-id hazard
 * (trans_done, nothing written), gen B's ERROR answers with vLLM's messages, Bl's region checks
 * and TP topology, and the consumer's view of landed blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "kv1/kv1.h"
#include "kv1_testlib.h"
#include "pd_util.h"

#define NBUFS 4
#define BLEN  512
#define NBLK  64

/* per-test overrides of the workers mk() makes */
static size_t mk_blen = BLEN;
static int mk_layer_bufs;
static bool mk_topo;

static struct kv1_worker *mk(enum cfg_gen gen, bool producer, int base, const char *boot,
                             const char *engine, int tp_size, int tp_rank, int abort_s)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, NBUFS, mk_blen, NBLK);

	o.base_port = base;
	o.tp_size = tp_size;
	o.tp_rank = tp_rank;
	o.engine_id = engine;
	o.bootstrap_url = boot;
	o.abort_timeout_s = abort_s;
	o.recv_timeout_ms = 10000;
	o.layer_bufs = mk_layer_bufs;
	o.tp_topology = mk_topo;
	return kv1t_create(&o);
}

static void fill(struct kv1_worker *w, const int64_t *ids, size_t n, uint8_t salt)
{
	for (int b = 0; b < NBUFS; b++)
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < BLEN; k++)
				kv1_block(w, b, ids[i])[k] = (uint8_t)(salt + b * 31 + i * 7 + k);
}

/* D's block d[i] must equal P's block p[i] in every buffer. */
static bool same(struct kv1_worker *p, const int64_t *pi, struct kv1_worker *d, const int64_t *di,
                 size_t n)
{
	for (int b = 0; b < NBUFS; b++)
		for (size_t i = 0; i < n; i++)
			if (memcmp(kv1_block(p, b, pi[i]), kv1_block(d, b, di[i]), BLEN))
				return false;
	return true;
}

static void test_plan(void **state)
{
	int64_t l[] = {4, 5, 6, 9, 10, 20}, r[] = {0, 1, 2, 3, 7};
	struct kv1_run *v;
	size_t n;
	(void)state;

	/* P has 6, D asked for 5: P's last 5 (5,6,9,10,20) against 0,1,2,3,7 */
	assert_int_equal(kv1_plan(l, 6, r, 5, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_true(v[0].local == 5 && v[0].remote == 0 && v[0].n == 2);
	assert_true(v[1].local == 9 && v[1].remote == 2 && v[1].n == 2);
	assert_true(v[2].local == 20 && v[2].remote == 7 && v[2].n == 1);
	free(v);
	assert_int_equal(kv1_plan(l, 2, r, 5, &v, &n), -ERANGE);
}

static void test_gen_a(void **state)
{
	int base = pd_free_port("127.0.0.1");
	struct kv1_worker *p = mk(CFG_GEN_A, true, base, NULL, NULL, 1, 0, 30);
	struct kv1_worker *d = mk(CFG_GEN_A, false, base, NULL, NULL, 1, 0, 30);
	int64_t pi[5], di[3];
	char err[512];
	struct kv1_stats st;
	(void)state;

	assert_int_equal(kv1_worker_side_port(p), base);
	assert_int_equal(kv1_alloc(p, 5, pi), 0);
	assert_int_equal(kv1_alloc(d, 3, di), 0);
	fill(p, pi, 5, 1);
	assert_int_equal(kv1_send_expect(p, "cmpl-x-0"), 0);
	assert_int_equal(kv1_send_ready(p, "cmpl-x-0", pi, 5), 0);
	assert_int_equal(kv1_recv_a(d, kv1_worker_ip(p), base, "cmpl-x-0", di, 3, err, sizeof(err)),
	                 0);
	assert_true(same(p, pi + 2, d, di, 3)); /* P's last 3 */
	kv1_worker_stats(p, &st);
	assert_int_equal(st.bytes_sent, 3 * BLEN * NBUFS);
	assert_int_equal(st.handler_threads_started, 1);
	/* the handler thread is kept for the next handshake (KV1_POOL_KEEP) */
	for (int i = 0; i < 200 && st.handler_threads_waiting != 1; i++) {
		pd_sleep_ms(10);
		kv1_worker_stats(p, &st);
	}
	assert_int_equal(st.handler_threads_waiting, 1);

	/* the hazard: an id P does not know is answered trans_done and nothing is written */
	{
		int64_t g[2];

		assert_int_equal(kv1_alloc(d, 2, g), 0);
		memset(kv1_block(d, 0, g[0]), 0xee, BLEN);
		assert_int_equal(kv1_recv_a(d, kv1_worker_ip(p), base, "cmpl-x-0-deadbeef", g, 2,
		                            err, sizeof(err)),
		                 0);
		assert_int_equal(kv1_block(d, 0, g[0])[0], 0xee);
		kv1_worker_stats(p, &st);
		assert_int_equal(st.unknown_ids, 1);
		assert_int_equal(st.bytes_sent, 3 * BLEN * NBUFS);
		assert_int_equal(st.handler_threads_started, 1); /* ran on the kept thread */
	}
	/* P has fewer blocks than D asks for: trans_error */
	{
		int64_t q[1], g[3];

		assert_int_equal(kv1_alloc(p, 1, q), 0);
		assert_int_equal(kv1_alloc(d, 3, g), 0);
		kv1_send_ready(p, "short", q, 1);
		assert_int_equal(
		    kv1_recv_a(d, kv1_worker_ip(p), base, "short", g, 3, err, sizeof(err)), -EIO);
		assert_non_null(strstr(err, "see logs in prefiller"));
	}
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	/* nobody listens: bounded by the receive timeout */
	{
		struct kv1_opts o = {0};
		struct kv1_worker *x;
		int64_t g[1] = {0};

		o.gen = CFG_GEN_A;
		o.protocol = "tcp";
		o.tp_size = 1;
		o.recv_timeout_ms = 300;
		o.nbufs = 1;
		o.block_len = BLEN;
		o.num_blocks = 4;
		assert_int_equal(kv1_worker_create(&o, &x, err, sizeof(err)), 0);
		assert_int_equal(kv1_recv_a(x, "127.0.0.1", base, "r", g, 1, err, sizeof(err)),
		                 -ETIMEDOUT);
		kv1_worker_destroy(x);
	}
}

static void run_gen_b(enum cfg_gen gen)
{
	enum kv1_shape sh = kv1_shape_of(gen);
	struct kv1_boot *b;
	int bport;
	char boot[64], err[512];
	struct kv1_worker *p, *d;
	int64_t pi[4], di[4];
	pthread_t t;
	struct kv1t_later l;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, sh, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(gen, true, 0, boot, "engine-p0", 2, 0, 2);
	d = mk(gen, false, 0, NULL, NULL, 1, 0, 2);
	assert_int_equal(kv1_alloc(p, 4, pi), 0);
	assert_int_equal(kv1_alloc(d, 4, di), 0);
	fill(p, pi, 4, 9);
	/* D asks before P's prefill finished: P waits, then writes and answers FINISH */
	l = (struct kv1t_later){p, "xfer-1", pi, 4};
	pthread_create(&t, NULL, kv1t_ready_later, &l);
	assert_int_equal(
	    kv1_recv_b(d, boot, "engine-p0", "xfer-1", "cmpl-d-0", di, 4, err, sizeof(err)), 0);
	pthread_join(t, NULL);
	assert_true(same(p, pi, d, di, 4));
	/* unknown engine id */
	assert_int_equal(kv1_recv_b(d, boot, "nope", "xfer-2", "r2", di, 4, err, sizeof(err)),
	                 -ENOENT);
	assert_non_null(strstr(err, "Failed to find remote engine_id nope"));
	/* never ready: FINISH{err_reqs, "Timeout waiting for P side ready."} after the timeout */
	assert_int_equal(kv1_recv_b(d, boot, "engine-p0", "xfer-3", "r3", di, 4, err, sizeof(err)),
	                 -EIO);
	assert_non_null(strstr(err, "Timeout waiting for P side ready."));
	/* P has fewer blocks than D */
	{
		int64_t q[1];

		assert_int_equal(kv1_alloc(p, 1, q), 0);
		kv1_send_ready(p, "xfer-4", q, 1);
		assert_int_equal(
		    kv1_recv_b(d, boot, "engine-p0", "xfer-4", "r4", di, 4, err, sizeof(err)),
		    -EIO);
		assert_non_null(strstr(err, "P num blocks less than D"));
	}
	kv1_worker_destroy(d);
	/* a D rank P was not meant to serve: P rank 0's ROUTER registered as tp rank 1 too */
	{
		struct kv1_worker *d1 = mk(gen, false, 0, NULL, NULL, 2, 1, 2);

		assert_int_equal(kv1_boot_register(boot, "engine-p0", 0, 1, 0,
		                                   kv1_worker_side_addr(p), sh, 2000, err,
		                                   sizeof(err)),
		                 0);
		assert_int_equal(
		    kv1_recv_b(d1, boot, "engine-p0", "xfer-5", "r5", di, 1, err, sizeof(err)),
		    -EIO);
		assert_non_null(strstr(err, "This P tp_rank 0 not in remote D target ranks [1]"));
		kv1_worker_destroy(d1);
	}
	kv1_worker_destroy(p);
	kv1_boot_stop(b);
}

struct waiter {
	struct kv1_worker *d;
	const int64_t *ids;
	atomic_int *done;
	int ret[NBUFS];
};

static void *wait_all(void *arg)
{
	struct waiter *wt = arg;

	for (int b = 0; b < NBUFS; b++)
		wt->ret[b] = kv1_landed_wait(wt->d, b, wt->ids, 4, wt->done);
	return NULL;
}

/* The consumer sees every buffer of its blocks land before the receive ends (the engine's
 * landed hook; done stays 0), a failed receive ends a wait, and write_order is validated. */
static void test_landed(void **state)
{
	struct kv1_boot *b;
	int bport, order[NBUFS] = {3, 1, 0, 2}, bad[NBUFS] = {0, 1, 1, 2};
	char boot[64], err[512];
	struct kv1_worker *p, *d, *x = NULL;
	int64_t pi[4], di[4];
	atomic_int done = 0, failed = 0;
	struct waiter wt = {NULL, di, &done, {-1, -1, -1, -1}};
	struct kv1_opts o = {0};
	pthread_t t;
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	o.gen = CFG_GEN_BN;
	o.producer = true;
	o.protocol = "tcp";
	o.tp_size = 1;
	o.engine_id = "engine-p0";
	o.bootstrap_url = boot;
	o.abort_timeout_s = 2;
	o.recv_timeout_ms = 10000;
	o.nbufs = NBUFS;
	o.block_len = BLEN;
	o.num_blocks = NBLK;
	o.write_order = bad;
	assert_int_not_equal(kv1_worker_create(&o, &x, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "write_order: entry 2"));
	o.write_order = order;
	assert_int_equal(kv1_worker_create(&o, &p, err, sizeof(err)), 0);
	d = mk(CFG_GEN_BN, false, 0, NULL, NULL, 1, 0, 2);
	assert_int_equal(kv1_alloc(p, 4, pi), 0);
	assert_int_equal(kv1_alloc(d, 4, di), 0);
	fill(p, pi, 4, 5);
	kv1_send_ready(p, "xfer-l", pi, 4);
	kv1_landed_reset(d, di, 4);
	wt.d = d;
	assert_int_equal(pthread_create(&t, NULL, wait_all, &wt), 0);
	assert_int_equal(kv1_recv_b(d, boot, "engine-p0", "xfer-l", "r-l", di, 4, err, sizeof(err)),
	                 0);
	pthread_join(t, NULL);
	for (int i = 0; i < NBUFS; i++)
		assert_int_equal(wt.ret[i], 0);
	assert_int_equal(atomic_load(&done), 0); /* every buffer was seen landing */
	assert_true(same(p, pi, d, di, 4));
	/* reset: nothing landed; a failed receive ends the wait */
	kv1_landed_reset(d, di, 4);
	kv1_landed_done(d, &failed, false);
	assert_int_equal(kv1_landed_wait(d, 0, di, 4, &failed), -ECANCELED);
	assert_int_equal(kv1_landed_wait(d, NBUFS, di, 4, &failed), -EINVAL);
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	kv1_boot_stop(b);
}

/* Issue 33 (slow/44-load-64-stream stalled): the landed hook runs on the engine's TCP server
 * thread, once per piece of every WRITE. It must not wake, nor wait for, consumer threads whose
 * blocks it did not complete: with 64 streams on 2 busy cores the server thread queued behind
 * dozens of woken waiters for the waiters' lock on every piece, its socket's receive window
 * closed and the producer's WRITEs made no progress until MC_TRANSFER_TIMEOUT. Here 32 waiters
 * wait on blocks nobody writes while a transfer lands in others: none may be woken by it, and a
 * failed receive still ends them at once. */
#define IDLE_WAITERS 32
struct idle_waiter {
	struct kv1_worker *d;
	const int64_t *ids;
	atomic_int *done;
	int buf, ret;
};

static void *idle_wait(void *arg)
{
	struct idle_waiter *iw = arg;

	iw->ret = kv1_landed_wait(iw->d, iw->buf, iw->ids, 4, iw->done);
	return NULL;
}

static void test_landed_idle_waiters(void **state)
{
	struct kv1_boot *b;
	int bport;
	char boot[64], err[512];
	struct kv1_worker *p, *d;
	int64_t pi[4], di[4], dx[4];
	atomic_int other = 0;
	struct idle_waiter iw[IDLE_WAITERS];
	pthread_t t[IDLE_WAITERS];
	struct kv1_stats st;
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(CFG_GEN_BN, true, 0, boot, "engine-p0", 1, 0, 2);
	d = mk(CFG_GEN_BN, false, 0, NULL, NULL, 1, 0, 2);
	assert_int_equal(kv1_alloc(p, 4, pi), 0);
	assert_int_equal(kv1_alloc(d, 4, di), 0);
	assert_int_equal(kv1_alloc(d, 4, dx), 0);
	fill(p, pi, 4, 9);
	kv1_landed_reset(d, di, 4);
	kv1_landed_reset(d, dx, 4);
	for (int i = 0; i < IDLE_WAITERS; i++) {
		iw[i] = (struct idle_waiter){d, dx, &other, i % NBUFS, 1};
		assert_int_equal(pthread_create(&t[i], NULL, idle_wait, &iw[i]), 0);
	}
	pd_sleep_ms(200); /* all asleep in their wait */
	for (int k = 0; k < 4; k++) {
		char xfer[32], req[32];

		snprintf(xfer, sizeof(xfer), "xfer-idle-%d", k);
		snprintf(req, sizeof(req), "r-idle-%d", k);
		kv1_landed_reset(d, di, 4);
		kv1_send_ready(p, xfer, pi, 4);
		assert_int_equal(
		    kv1_recv_b(d, boot, "engine-p0", xfer, req, di, 4, err, sizeof(err)), 0);
		assert_true(same(p, pi, d, di, 4));
	}
	kv1_worker_stats(d, &st);
	print_message("waits woken by WRITEs that landed none of their blocks: %llu\n",
	              (unsigned long long)st.landed_idle_wakes);
	assert_int_equal(st.landed_idle_wakes, 0);
	kv1_landed_done(d, &other, false); /* their receive failed: every wait ends */
	for (int i = 0; i < IDLE_WAITERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(iw[i].ret, -ECANCELED);
	}
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	kv1_boot_stop(b);
}

static void test_gen_bn(void **state)
{
	(void)state;
	run_gen_b(CFG_GEN_BN);
}

static void test_gen_b0(void **state)
{
	(void)state;
	run_gen_b(CFG_GEN_B0);
}

/* An older (B0) decode against a newer (Bn) prefill: P cannot decode the 6-field struct. */
static void test_b0_d_bn_p(void **state)
{
	struct kv1_boot *b;
	int bport;
	char boot[64], err[512];
	struct kv1_worker *p, *d;
	int64_t di[2];
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(CFG_GEN_BN, true, 0, boot, "e", 1, 0, 2);
	d = mk(CFG_GEN_B0, false, 0, NULL, NULL, 1, 0, 2);
	assert_int_equal(kv1_alloc(d, 2, di), 0);
	assert_int_equal(kv1_recv_b(d, boot, "e", "x", "r", di, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Object missing required field `block_lens`"));
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	kv1_boot_stop(b);
}

static void test_gen_bl(void **state)
{
	(void)state;
	run_gen_b(CFG_GEN_BL);
}

/* A P and a D of the given generations on a fresh bootstrap server; D pulls 2 blocks. */
struct pair {
	struct kv1_boot *b;
	char boot[64];
	struct kv1_worker *p, *d;
	int64_t pi[2], di[2];
};

static void pair_up(struct pair *x, enum cfg_gen pg, enum cfg_gen dg, int d_layer_bufs,
                    size_t d_blen)
{
	int bport;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, kv1_shape_of(pg), &x->b, &bport), 0);
	snprintf(x->boot, sizeof(x->boot), "http://127.0.0.1:%d", bport);
	x->p = mk(pg, true, 0, x->boot, "e", 1, 0, 2);
	mk_layer_bufs = d_layer_bufs;
	mk_blen = d_blen;
	x->d = mk(dg, false, 0, NULL, NULL, 1, 0, 2);
	mk_layer_bufs = 0;
	mk_blen = BLEN;
	assert_int_equal(kv1_alloc(x->p, 2, x->pi), 0);
	assert_int_equal(kv1_alloc(x->d, 2, x->di), 0);
	fill(x->p, x->pi, 2, 3);
	assert_int_equal(kv1_send_ready(x->p, "x", x->pi, 2), 0);
}

static int pair_pull(struct pair *x, char *err, size_t errsz)
{
	return kv1_recv_b(x->d, x->boot, "e", "x", "r", x->di, 2, err, errsz);
}

static void pair_down(struct pair *x)
{
	kv1_worker_destroy(x->d);
	kv1_worker_destroy(x->p);
	kv1_boot_stop(x->b);
}

/* A pre-#44528 (Bn) decode against a v0.31 (Bl) prefill: vLLM's assertion on every handshake;
 * a Bl decode against a Bn prefill: the extra keys are ignored and the KV moves. */
static void test_bn_bl_mixed(void **state)
{
	struct pair x;
	char err[512];
	(void)state;

	pair_up(&x, CFG_GEN_BL, CFG_GEN_BN, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Mooncake transfer regions require matching metadata lengths, "
	                            "got base_addrs=4, block_lens=4, kv_block_lens=4, "
	                            "layer_names=0, layer_indices=0."));
	pair_down(&x);
	pair_up(&x, CFG_GEN_BN, CFG_GEN_BL, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), 0);
	assert_true(same(x.p, x.pi, x.d, x.di, 2));
	pair_down(&x);
}

/* Bl region checks answered with vLLM's texts: a layer occurrence D lacks (D registers one
 * buffer per layer, P two), a region length mismatch. */
static void test_bl_regions(void **state)
{
	struct pair x;
	char err[512];
	(void)state;

	pair_up(&x, CFG_GEN_BL, CFG_GEN_BL, 1, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Mooncake producer registered layer has no matching consumer "
	                            "occurrence: model.layers.0.self_attn.attn occurrence 1."));
	pair_down(&x);
	pair_up(&x, CFG_GEN_BL, CFG_GEN_BL, 0, BLEN / 2);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Mooncake KV region length mismatch for homogeneous TP at "
	                            "region 0: local=512, remote=256."));
	pair_down(&x);
}

/* A Bl handshake whose request carries two KV-group lists (pdkv's prefill has one group):
 * err_reqs with vLLM's "KV group count mismatch"; sent raw on a DEALER. */
static void test_bl_group_count(void **state)
{
	struct pair x;
	int64_t g0[] = {1, 2}, g1[] = {3}, lens[NBUFS], idx[NBUFS] = {0, 0, 1, 1};
	struct kv1_ids groups[2] = {{g0, 2}, {g1, 1}};
	struct kv1_req_blocks rb = {"r", "x", groups, 2};
	char *names[NBUFS] = {"model.layers.0.self_attn.attn", "model.layers.0.self_attn.attn",
	                      "model.layers.1.self_attn.attn", "model.layers.1.self_attn.attn"};
	uint64_t bases[NBUFS] = {0x1000, 0x2000, 0x3000, 0x4000};
	struct kv1_xfer_meta m = {.remote_hostname = "127.0.0.1",
	                          .remote_port = 1,
	                          .remote_tp_size = 1,
	                          .reqs = &rb,
	                          .nreqs = 1,
	                          .bases = bases,
	                          .nbases = NBUFS,
	                          .block_lens = lens,
	                          .nblock_lens = NBUFS,
	                          .kv_block_lens = lens,
	                          .nkv_block_lens = NBUFS,
	                          .remote_pp_size = 1,
	                          .layer_names = names,
	                          .nlayer_names = NBUFS,
	                          .layer_indices = idx,
	                          .nlayer_indices = NBUFS};
	struct kv1_xfer_resp r;
	char *buf, rb_[512], err[256];
	size_t len;
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
	int tmo = 10000, n;
	(void)state;

	for (int i = 0; i < NBUFS; i++)
		lens[i] = BLEN;
	pair_up(&x, CFG_GEN_BL, CFG_GEN_BL, 0, BLEN);
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BL, &buf, &len), 0);
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
	assert_int_equal(zmq_connect(s, kv1_worker_side_addr(x.p)), 0);
	assert_int_equal(zmq_send(s, buf, len, 0), (int)len);
	n = zmq_recv(s, rb_, sizeof(rb_), 0);
	assert_true(n > 0);
	assert_int_equal(kv1_xfer_resp_decode(rb_, (size_t)n, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, KV1_FINISH);
	assert_int_equal(r.nerr, 1);
	assert_string_equal(r.err_msg, "KV group count mismatch");
	kv1_xfer_resp_free(&r);
	free(buf);
	zmq_close(s);
	zmq_ctx_term(ctx);
	pair_down(&x);
}

/* TP topology (#36869), P2 -> D4: D ranks 0, 1 read P rank 0's first and second halves of each
 * block, D ranks 2, 3 P rank 1's; P rank 0 keeps the entry until both of its D ranks pulled;
 * D rank 1 sent to P rank 1 gets vLLM's pairing error. */
static void test_tp_p2_d4(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p[2], *d[4];
	int64_t pi[2][2], di[4][2];
	int bport;
	char boot[64], err[512];
	(void)state;

	mk_topo = true;
	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BL, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	for (int r = 0; r < 2; r++) {
		p[r] = mk(CFG_GEN_BL, true, 0, boot, "p", 2, r, 2);
		assert_int_equal(kv1_alloc(p[r], 2, pi[r]), 0);
		fill(p[r], pi[r], 2, (uint8_t)(40 + r));
		assert_int_equal(kv1_send_ready(p[r], "x", pi[r], 2), 0);
	}
	mk_blen = BLEN / 2;
	for (int r = 0; r < 4; r++) {
		d[r] = mk(CFG_GEN_BL, false, 0, NULL, NULL, 4, r, 2);
		assert_int_equal(kv1_alloc(d[r], 2, di[r]), 0);
	}
	mk_blen = BLEN;
	for (int r = 0; r < 4; r++) {
		if (kv1_recv_b(d[r], boot, "p", "x", "r", di[r], 2, err, sizeof(err)))
			fail_msg("D rank %d: %s", r, err);
		for (int bf = 0; bf < NBUFS; bf++)
			for (int i = 0; i < 2; i++)
				assert_memory_equal(kv1_block(d[r], bf, di[r][i]),
				                    kv1_block(p[r / 2], bf, pi[r / 2][i]) +
				                        (r % 2) * (BLEN / 2),
				                    BLEN / 2);
	}
	/* both D ranks of each P rank pulled: the entries are gone (a third pull waits) */
	{
		struct kv1_stats st;

		kv1_worker_stats(p[0], &st);
		assert_int_equal(st.xfers, 2);
	}
	/* D rank 1 sent to P rank 1: registered as rank 0 of engine "q" */
	assert_int_equal(kv1_boot_register(boot, "q", 1, 0, 0, kv1_worker_side_addr(p[1]),
	                                   KV1_SHAPE_BL, 2000, err, sizeof(err)),
	                 0);
	assert_int_equal(kv1_boot_register(boot, "q", 1, 1, 0, kv1_worker_side_addr(p[0]),
	                                   KV1_SHAPE_BL, 2000, err, sizeof(err)),
	                 0);
	assert_int_equal(kv1_recv_b(d[1], boot, "q", "y", "r", di[1], 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "This D tp_rank 1 is not paired with P tp_rank 1; expected one "
	                            "of [2, 3]."));
	for (int r = 0; r < 4; r++)
		kv1_worker_destroy(d[r]);
	for (int r = 0; r < 2; r++)
		kv1_worker_destroy(p[r]);
	kv1_boot_stop(b);
	mk_topo = false;
}

/* TP topology, P4 -> D2: D rank 0 pulls from P ranks 0 and 1, each writing its heads at its
 * offset in D's twice-larger block. */
static void test_tp_p4_d2(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p[4], *d;
	int64_t pi[4][2], di[2];
	int bport;
	char boot[64], err[512];
	(void)state;

	mk_topo = true;
	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BL, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	for (int r = 0; r < 4; r++) {
		p[r] = mk(CFG_GEN_BL, true, 0, boot, "p", 4, r, 2);
		assert_int_equal(kv1_alloc(p[r], 2, pi[r]), 0);
		fill(p[r], pi[r], 2, (uint8_t)(70 + r));
		assert_int_equal(kv1_send_ready(p[r], "x", pi[r], 2), 0);
	}
	mk_blen = 2 * BLEN;
	d = mk(CFG_GEN_BL, false, 0, NULL, NULL, 2, 0, 2);
	mk_blen = BLEN;
	assert_int_equal(kv1_alloc(d, 2, di), 0);
	if (kv1_recv_b(d, boot, "p", "x", "r", di, 2, err, sizeof(err)))
		fail_msg("%s", err);
	for (int bf = 0; bf < NBUFS; bf++)
		for (int i = 0; i < 2; i++)
			for (int r = 0; r < 2; r++)
				assert_memory_equal(kv1_block(d, bf, di[i]) + r * BLEN,
				                    kv1_block(p[r], bf, pi[r][i]), BLEN);
	kv1_worker_destroy(d);
	for (int r = 0; r < 4; r++)
		kv1_worker_destroy(p[r]);
	kv1_boot_stop(b);
	mk_topo = false;
}

static void test_rdma_missing(void **state)
{
	struct kv1_opts o = {0};
	struct kv1_worker *w;
	char err[512];
	(void)state;

	if (access("/sys/class/infiniband", F_OK) == 0)
		skip();
	o.gen = CFG_GEN_BN;
	o.protocol = "rdma";
	o.tp_size = 1;
	o.nbufs = 1;
	o.block_len = 64;
	o.num_blocks = 1;
	assert_int_equal(kv1_worker_create(&o, &w, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "kv_connector_extra_config.mooncake_protocol"));
}

/* B1 (#36869) and B2 (#40860) end to end: the KV moves and lands byte for byte, the errors
 * are vLLM's (run_gen_b); P checks the block lengths D sends (kv_block_len = block_len). */
static void test_gen_b1(void **state)
{
	(void)state;
	run_gen_b(CFG_GEN_B1);
}

static void test_gen_b2(void **state)
{
	(void)state;
	run_gen_b(CFG_GEN_B2);
}

/* Mixed shapes as vLLM's msgspec decoder on the prefill meets them: a B0 decode lacks B1's
 * block_lens; B1's extra key means nothing to a B0 prefill; B2's per-group lists are not B1's
 * ints, nor B1's ints B2's lists; Bn's kv_block_lens is ignored by B2. B1's length check. */
static void test_b1_b2_mixed(void **state)
{
	struct pair x;
	char err[512];
	(void)state;

	pair_up(&x, CFG_GEN_B1, CFG_GEN_B0, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Object missing required field `block_lens`"));
	pair_down(&x);
	pair_up(&x, CFG_GEN_B0, CFG_GEN_B1, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), 0);
	assert_true(same(x.p, x.pi, x.d, x.di, 2));
	pair_down(&x);
	pair_up(&x, CFG_GEN_B1, CFG_GEN_B2, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Expected `int`, got `array`"));
	pair_down(&x);
	pair_up(&x, CFG_GEN_B2, CFG_GEN_B1, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Expected `array`, got `int`"));
	pair_down(&x);
	pair_up(&x, CFG_GEN_B2, CFG_GEN_BN, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), 0);
	assert_true(same(x.p, x.pi, x.d, x.di, 2));
	pair_down(&x);
	pair_up(&x, CFG_GEN_BN, CFG_GEN_B2, 0, BLEN);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Object missing required field `kv_block_lens`"));
	pair_down(&x);
	pair_up(&x, CFG_GEN_B1, CFG_GEN_B1, 0, BLEN / 2);
	assert_int_equal(pair_pull(&x, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Mooncake KV region length mismatch for homogeneous TP at "
	                            "region 0: local=512, remote=256."));
	pair_down(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_gen_a),
	    cmocka_unit_test(test_gen_bn),
	    cmocka_unit_test(test_gen_b0),
	    cmocka_unit_test(test_b0_d_bn_p),
	    cmocka_unit_test(test_rdma_missing),
	    cmocka_unit_test(test_landed),
	    cmocka_unit_test(test_gen_bl),
	    cmocka_unit_test(test_bn_bl_mixed),
	    cmocka_unit_test(test_bl_regions),
	    cmocka_unit_test(test_bl_group_count),
	    cmocka_unit_test(test_tp_p2_d4),
	    cmocka_unit_test(test_tp_p4_d2),
	    cmocka_unit_test(test_gen_b1),
	    cmocka_unit_test(test_gen_b2),
	    cmocka_unit_test(test_b1_b2_mixed),
	    cmocka_unit_test(test_landed_idle_waiters),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
