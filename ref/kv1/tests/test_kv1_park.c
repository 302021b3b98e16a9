/* SPDX-License-Identifier: Apache-2.0 */
/* gen B producer under a flood of handshakes for transfer ids it never saw (issue 11): they wait
 * parked on no thread, so a legitimate transfer still completes; the parking caps (total, per
 * peer, bytes) refuse the excess at once, counted; unknown ids time out with vLLM's answer. */
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
#include "kv1_testlib.h"
#include "pd_util.h"

#define NBUFS 2
#define BLEN  256
#define NBLK  64

static struct kv1_worker *mk(bool producer, const char *boot, int abort_s)
{
	struct kv1_opts o = kv1t_opts(CFG_GEN_BN, producer, boot, NBUFS, BLEN, NBLK);

	o.ip = "127.0.0.1";
	o.engine_id = producer ? "engine-p" : NULL;
	o.abort_timeout_s = abort_s;
	o.recv_timeout_ms = 10000;
	return kv1t_create(&o);
}

/* A rogue DEALER bound to source address src on p's ROUTER. */
static void *rogue_open(void *ctx, struct kv1_worker *p, const char *src)
{
	void *s = zmq_socket(ctx, ZMQ_DEALER);
	char ep[256];
	int zero = 0, rcv = 5000;

	assert_non_null(s);
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcv, sizeof(rcv));
	snprintf(ep, sizeof(ep), "tcp://%s:0;%s", src, kv1_worker_side_addr(p) + 6);
	assert_int_equal(zmq_connect(s, ep), 0);
	return s;
}

/* n well-formed MooncakeXferMetadata for transfer ids nobody will make ready, nids block ids
 * each (5 msgpack bytes an id). */
static void rogue_send_ids(void *s, const char *tag, int n, size_t nids)
{
	uint64_t bases[NBUFS] = {0x1000, 0x2000};
	int64_t lens[NBUFS] = {BLEN, BLEN}, *blk = calloc(nids, sizeof(*blk));
	struct kv1_ids g = {blk, nids};

	assert_non_null(blk);
	for (size_t i = 0; i < nids; i++)
		blk[i] = 100000 + (int64_t)i;

	for (int i = 0; i < n; i++) {
		char rid[64], xid[64], *buf;
		size_t len;
		struct kv1_req_blocks rb = {rid, xid, &g, 1};
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
		                          .remote_pp_size = 1};

		snprintf(rid, sizeof(rid), "rogue-req-%s-%d", tag, i);
		snprintf(xid, sizeof(xid), "rogue-xfer-%s-%d", tag, i);
		assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &buf, &len), 0);
		assert_int_equal(zmq_send(s, buf, len, 0), (int)len);
		free(buf);
	}
	free(blk);
}

static void rogue_send(void *s, const char *tag, int n)
{
	rogue_send_ids(s, tag, n, 1);
}

/* Receives n answers; each must be FINISH with its request in err_reqs and err_msg containing
 * want. */
static void rogue_expect(void *s, int n, const char *want)
{
	for (int i = 0; i < n; i++) {
		zmq_msg_t msg;
		struct kv1_xfer_resp r;
		char err[256];

		zmq_msg_init(&msg);
		assert_true(zmq_msg_recv(&msg, s, 0) >= 0);
		assert_int_equal(kv1_xfer_resp_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &r,
		                                      err, sizeof(err)),
		                 0);
		zmq_msg_close(&msg);
		assert_int_equal(r.status, KV1_FINISH);
		assert_int_equal(r.nerr, 1);
		assert_non_null(r.err_msg);
		if (!strstr(r.err_msg, want))
			fail_msg("answer %d: err_msg \"%s\", expected \"%s\"", i, r.err_msg, want);
		kv1_xfer_resp_free(&r);
	}
}

static void wait_handshakes(struct kv1_worker *p, uint64_t n)
{
	struct kv1_stats st;

	for (int i = 0; i < 1000; i++) {
		kv1_worker_stats(p, &st);
		if (st.handshakes >= n)
			break;
		pd_sleep_ms(10);
	}
	assert_true(st.handshakes >= n);
	pd_sleep_ms(200); /* the handlers park them */
}

/* D asks for key (before P makes it ready when early); must complete with P's bytes. */
static void legit(struct kv1_worker *p, struct kv1_worker *d, const char *boot, const char *key,
                  bool early)
{
	int64_t pi[3], di[3];
	char err[512];
	pthread_t t;
	struct kv1t_later l = {p, key, pi, 3};

	assert_int_equal(kv1_alloc(p, 3, pi), 0);
	assert_int_equal(kv1_alloc(d, 3, di), 0);
	for (int b = 0; b < NBUFS; b++)
		for (int i = 0; i < 3; i++)
			memset(kv1_block(p, b, pi[i]), 0x40 + b * 3 + i, BLEN);
	if (early)
		pthread_create(&t, NULL, kv1t_ready_later, &l);
	else
		assert_int_equal(kv1_send_ready(p, key, pi, 3), 0);
	if (kv1_recv_b(d, boot, "engine-p", key, key, di, 3, err, sizeof(err)))
		fail_msg("legitimate transfer %s: %s", key, err);
	if (early)
		pthread_join(t, NULL);
	for (int b = 0; b < NBUFS; b++)
		for (int i = 0; i < 3; i++)
			assert_int_equal(kv1_block(d, b, di[i])[BLEN - 1], 0x40 + b * 3 + i);
	kv1_free(d, di, 3);
}

/* 80 unknown-id handshakes (more than the 64 handler threads) from one rogue, then legitimate
 * transfers, asked before and after P is ready: they complete (before the fix they waited
 * behind the rogue's handlers until their receive timeout). */
static void test_flood_then_legit(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p, *d;
	void *ctx = zmq_ctx_new(), *r;
	char boot[64];
	int bport;
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(true, boot, 60);
	d = mk(false, NULL, 60);
	r = rogue_open(ctx, p, "127.0.0.9");
	rogue_send(r, "a", 80);
	wait_handshakes(p, 80);
	legit(p, d, boot, "xfer-early", true);
	legit(p, d, boot, "xfer-ready", false);
	legit(p, d, boot, "xfer-early-2", true);
	kv1_worker_destroy(d);
	kv1_worker_destroy(p); /* answers the parked ones: the rogue's socket may hold them */
	zmq_close(r);
	zmq_ctx_term(ctx);
	kv1_boot_stop(b);
}

/* Caps: per peer 8, in total 12. The excess is refused at once and counted; a peer under its
 * cap still parks; once the total is reached everyone's waits are refused. */
static void test_caps(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p, *d;
	void *ctx = zmq_ctx_new(), *r1, *r2;
	struct kv1_stats st;
	char boot[64], err[512];
	int bport;
	int64_t di[1];
	(void)state;

	setenv("PDKV_KV1_MAX_PARKED_PER_PEER", "8", 1);
	setenv("PDKV_KV1_MAX_PARKED", "12", 1);
	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(true, boot, 60);
	d = mk(false, NULL, 60);
	unsetenv("PDKV_KV1_MAX_PARKED_PER_PEER");
	unsetenv("PDKV_KV1_MAX_PARKED");
	r1 = rogue_open(ctx, p, "127.0.0.9");
	rogue_send(r1, "a", 20);
	rogue_expect(r1, 12,
	             "handshakes from 127.0.0.9 already waiting for P side ready "
	             "(PDKV_KV1_MAX_PARKED_PER_PEER=8)");
	kv1_worker_stats(p, &st);
	assert_int_equal(st.rejected, 12);
	/* D (127.0.0.1) is another peer: its early ask parks and completes */
	legit(p, d, boot, "xfer-early", true);
	r2 = rogue_open(ctx, p, "127.0.0.10");
	rogue_send(r2, "b", 6);
	rogue_expect(r2, 2, "(PDKV_KV1_MAX_PARKED=12)");
	/* now full: D's early ask is refused at once, with the reason */
	assert_int_equal(kv1_alloc(d, 1, di), 0);
	assert_int_equal(
	    kv1_recv_b(d, boot, "engine-p", "xfer-x", "req-x", di, 1, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "P side refused to wait"));
	kv1_worker_stats(p, &st);
	assert_int_equal(st.rejected, 15);
	/* ready ones never park: served even now */
	legit(p, d, boot, "xfer-ready", false);
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	zmq_close(r1);
	zmq_close(r2);
	zmq_ctx_term(ctx);
	kv1_boot_stop(b);
}

static struct kv1_xfer_resp recv_resp(void *s)
{
	zmq_msg_t msg;
	struct kv1_xfer_resp r;
	char err[256];

	zmq_msg_init(&msg);
	assert_true(zmq_msg_recv(&msg, s, 0) >= 0);
	assert_int_equal(
	    kv1_xfer_resp_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &r, err, sizeof(err)), 0);
	zmq_msg_close(&msg);
	return r;
}

/* One handshake for two requests, one ready: CONTINUE with it, then the handshake parks for the
 * other and, once P makes that one ready, FINISH with it — in that order, both written. */
static void test_continue_then_park(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p, *d;
	void *ctx = zmq_ctx_new(), *s;
	char boot[64], host[128], *buf;
	int bport, dport = 0;
	size_t len;
	int64_t pa[2], pb[2], da[2], db[2];
	uint64_t bases[NBUFS];
	int64_t lens[NBUFS] = {BLEN, BLEN};
	struct kv1_xfer_resp r;
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(true, boot, 60);
	d = mk(false, NULL, 60);
	assert_int_equal(kv1_alloc(p, 2, pa), 0);
	assert_int_equal(kv1_alloc(p, 2, pb), 0);
	assert_int_equal(kv1_alloc(d, 2, da), 0);
	assert_int_equal(kv1_alloc(d, 2, db), 0);
	for (int k = 0; k < NBUFS; k++) {
		bases[k] = (uint64_t)(uintptr_t)kv1_block(d, k, 0);
		for (int i = 0; i < 2; i++) {
			memset(kv1_block(p, k, pa[i]), 0x11 + k, BLEN);
			memset(kv1_block(p, k, pb[i]), 0x22 + k, BLEN);
		}
	}
	pd_split_hostport(kv1_worker_segment(d), host, sizeof(host), &dport);
	{
		struct kv1_ids ga = {da, 2}, gb = {db, 2};
		struct kv1_req_blocks rb[2] = {{"req-a", "xfer-a", &ga, 1},
		                               {"req-b", "xfer-b", &gb, 1}};
		struct kv1_xfer_meta m = {.remote_hostname = "127.0.0.1",
		                          .remote_port = dport,
		                          .remote_tp_size = 1,
		                          .reqs = rb,
		                          .nreqs = 2,
		                          .bases = bases,
		                          .nbases = NBUFS,
		                          .block_lens = lens,
		                          .nblock_lens = NBUFS,
		                          .kv_block_lens = lens,
		                          .nkv_block_lens = NBUFS,
		                          .remote_pp_size = 1};

		assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &buf, &len), 0);
	}
	assert_int_equal(kv1_send_ready(p, "xfer-a", pa, 2), 0);
	s = rogue_open(ctx, p, "127.0.0.1");
	assert_int_equal(zmq_send(s, buf, len, 0), (int)len);
	free(buf);
	r = recv_resp(s);
	assert_int_equal(r.status, KV1_CONTINUE);
	assert_int_equal(r.nok, 1);
	assert_string_equal(r.ok[0], "req-a");
	kv1_xfer_resp_free(&r);
	wait_handshakes(p, 1); /* and the 200 ms for it to park */
	assert_int_equal(kv1_send_ready(p, "xfer-b", pb, 2), 0);
	r = recv_resp(s);
	assert_int_equal(r.status, KV1_FINISH);
	assert_int_equal(r.nok, 1);
	assert_string_equal(r.ok[0], "req-b");
	assert_int_equal(r.nerr, 0);
	kv1_xfer_resp_free(&r);
	for (int k = 0; k < NBUFS; k++)
		for (int i = 0; i < 2; i++) {
			assert_int_equal(kv1_block(d, k, da[i])[0], 0x11 + k);
			assert_int_equal(kv1_block(d, k, db[i])[BLEN - 1], 0x22 + k);
		}
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	zmq_close(s);
	zmq_ctx_term(ctx);
	kv1_boot_stop(b);
}

/* The bytes cap: 1 MiB holds three handshakes of 64 Ki ids (~320 KiB each); the rest are
 * refused at once. */
static void test_bytes_cap(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p;
	void *ctx = zmq_ctx_new(), *r;
	struct kv1_stats st;
	char boot[64];
	int bport;
	(void)state;

	setenv("PDKV_KV1_MAX_PARKED_MIB", "1", 1);
	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(true, boot, 60);
	unsetenv("PDKV_KV1_MAX_PARKED_MIB");
	r = rogue_open(ctx, p, "127.0.0.9");
	rogue_send_ids(r, "a", 5, 65536);
	rogue_expect(r, 2, "(PDKV_KV1_MAX_PARKED_MIB=1)");
	kv1_worker_stats(p, &st);
	assert_int_equal(st.rejected, 2);
	kv1_worker_destroy(p);
	zmq_close(r);
	zmq_ctx_term(ctx);
	kv1_boot_stop(b);
}

/* Unknown ids end with vLLM's timeout answer after abort_timeout_s, counted as unknown ids; a
 * bad cap in the environment is refused at create. */
static void test_timeout_and_bad_cap(void **state)
{
	struct kv1_boot *b;
	struct kv1_worker *p, *x = NULL;
	struct kv1_opts o = {0};
	void *ctx = zmq_ctx_new(), *r;
	struct kv1_stats st;
	char boot[64], err[512];
	int bport;
	(void)state;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BN, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(true, boot, 1);
	r = rogue_open(ctx, p, "127.0.0.9");
	rogue_send(r, "a", 5);
	rogue_expect(r, 5, "Timeout waiting for P side ready.");
	kv1_worker_stats(p, &st);
	assert_int_equal(st.unknown_ids, 5);
	kv1_worker_destroy(p);
	zmq_close(r);
	zmq_ctx_term(ctx);
	kv1_boot_stop(b);

	setenv("PDKV_KV1_MAX_PARKED", "lots", 1);
	o.gen = CFG_GEN_BN;
	o.protocol = "tcp";
	o.tp_size = 1;
	o.nbufs = 1;
	o.block_len = 64;
	o.num_blocks = 1;
	assert_int_equal(kv1_worker_create(&o, &x, err, sizeof(err)), -1);
	unsetenv("PDKV_KV1_MAX_PARKED");
	assert_non_null(strstr(err, "PDKV_KV1_MAX_PARKED=\"lots\": expected an integer"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flood_then_legit),
	    cmocka_unit_test(test_continue_then_park),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_bytes_cap),
	    cmocka_unit_test(test_timeout_and_bad_cap),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
