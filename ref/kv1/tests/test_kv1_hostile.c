/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 34, gen B over loopback TE/TCP: handshakes no decode sends (remote_tp_rank 99 of 1, an
 * empty kv_caches_base_addr) are refused at once on every shape (N9), and a decode pull for an
 * unknown or already served transfer_id ends with vLLM's timeout answer, counted (N10). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kv1/kv1.h"
#include "kv1_testlib.h"
#include "pd_util.h"

#define NBUFS 2
#define BLEN  256
#define NBLK  16

static struct kv1_worker *mk(enum cfg_gen gen, bool producer, bool topo, const char *boot,
                             int abort_s)
{
	struct kv1_opts o = kv1t_opts(gen, producer, boot, NBUFS, BLEN, NBLK);

	o.ip = "127.0.0.1";
	o.engine_id = producer ? "engine-p" : NULL;
	o.abort_timeout_s = abort_s;
	o.recv_timeout_ms = 20000;
	o.tp_topology = topo;
	return kv1t_create(&o);
}

/* One hostile handshake to p (abort timeout 30 s); its answer must be ERROR within 3 s with
 * want in err_msg. */
static void expect_refused(struct kv1_worker *p, enum cfg_gen gen, int64_t tp_rank, bool no_bases,
                           const char *want)
{
	void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
	uint64_t bases[NBUFS] = {0x1000, 0x2000};
	int64_t lens[NBUFS] = {BLEN, BLEN}, blk[1] = {3};
	struct kv1_ids g = {blk, 1};
	struct kv1_req_blocks rb = {"hostile-req", "hostile-xfer", &g, 1};
	char *names[NBUFS] = {"model.layers.0.self_attn.attn", "model.layers.0.self_attn.attn"};
	int64_t li[NBUFS] = {0, 0}, gi[NBUFS] = {0, 0};
	struct kv1_xfer_meta m = {.remote_hostname = "127.0.0.1",
	                          .remote_port = 1,
	                          .remote_tp_size = 1,
	                          .remote_tp_rank = tp_rank,
	                          .reqs = &rb,
	                          .nreqs = 1,
	                          .bases = bases,
	                          .nbases = no_bases ? 0 : NBUFS,
	                          .block_lens = lens,
	                          .nblock_lens = NBUFS,
	                          .kv_block_lens = lens,
	                          .nkv_block_lens = NBUFS,
	                          .layer_names = names,
	                          .nlayer_names = NBUFS,
	                          .layer_indices = li,
	                          .nlayer_indices = NBUFS,
	                          .group_indices = gi,
	                          .ngroup_indices = NBUFS,
	                          .remote_pp_size = 1};
	int zero = 0, rcv = 3000;
	char *buf, err[256];
	size_t len;
	zmq_msg_t msg;
	struct kv1_xfer_resp r;
	double t0 = pd_now_s();

	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcv, sizeof(rcv));
	assert_int_equal(zmq_connect(s, kv1_worker_side_addr(p)), 0);
	assert_int_equal(kv1_xfer_meta_encode(&m, kv1_shape_of(gen), &buf, &len), 0);
	assert_int_equal(zmq_send(s, buf, len, 0), (int)len);
	free(buf);
	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, s, 0) < 0)
		fail_msg("gen %s, remote_tp_rank %lld%s: no answer within 3 s (parked until the "
		         "abort timeout)",
		         cfg_gen_name(gen), (long long)tp_rank, no_bases ? ", no bases" : "");
	assert_int_equal(
	    kv1_xfer_resp_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &r, err, sizeof(err)), 0);
	zmq_msg_close(&msg);
	assert_int_equal(r.status, KV1_ERROR);
	if (!r.err_msg || !strstr(r.err_msg, want))
		fail_msg("gen %s: err_msg \"%s\", expected \"%s\"", cfg_gen_name(gen),
		         r.err_msg ? r.err_msg : "(none)", want);
	assert_true(pd_now_s() - t0 < 3.0);
	kv1_xfer_resp_free(&r);
	zmq_close(s);
	zmq_ctx_term(ctx);
}

/* N9: each gen-B shape, with and without TP topology as the release rows have it. */
static void test_bad_handshakes_refused_at_once(void **st)
{
	static const struct {
		enum cfg_gen gen;
		bool topo;
		const char *rank_msg, *bases_msg;
	} c[] = {
	    {CFG_GEN_B0, false, "remote_tp_rank 99 is outside remote_tp_size 1",
	     "kv_caches_base_addr is empty"},
	    {CFG_GEN_B1, true,
	     "This D tp_rank 99 is not paired with P tp_rank 0; expected one of [0].",
	     "Mooncake transfer regions require matching numbers of base addresses and block "
	     "lengths, got 0 and 2."},
	    {CFG_GEN_B2, true, "This D tp_rank 99 is not paired", "got 0 and 2."},
	    {CFG_GEN_BN, true, "This D tp_rank 99 is not paired", "got 0 and 2."},
	    {CFG_GEN_BN, false, "remote_tp_rank 99 is outside remote_tp_size 1", "got 0 and 2."},
	    {CFG_GEN_BL, true, "This D tp_rank 99 is not paired",
	     "Mooncake transfer regions require matching metadata lengths, got base_addrs=0"},
	};
	(void)st;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct kv1_worker *p = mk(c[i].gen, true, c[i].topo, NULL, 30);
		struct kv1_stats s;

		expect_refused(p, c[i].gen, 99, false, c[i].rank_msg);
		expect_refused(p, c[i].gen, 0, true, c[i].bases_msg);
		kv1_worker_stats(p, &s);
		assert_int_equal(s.rejected, 2);
		kv1_worker_destroy(p);
	}
}

/* N10: an unknown and an already served transfer_id end with vLLM's "Timeout waiting for P side
 * ready." after the abort timeout (1 s here, 480 s by default), not the receive timeout, and
 * the decode counts them in recv_p_timeouts. */
static void test_unknown_and_served_ids(void **st)
{
	struct kv1_boot *b;
	struct kv1_worker *p, *d;
	struct kv1_stats s;
	int64_t pi[2], di[2];
	int bport;
	char boot[64], err[512];
	double t0;
	(void)st;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_BL, &b, &bport), 0);
	snprintf(boot, sizeof(boot), "http://127.0.0.1:%d", bport);
	p = mk(CFG_GEN_BL, true, true, boot, 1);
	d = mk(CFG_GEN_BL, false, true, NULL, 1);
	assert_int_equal(kv1_alloc(p, 2, pi), 0);
	assert_int_equal(kv1_alloc(d, 2, di), 0);
	assert_int_equal(kv1_send_ready(p, "xfer-served", pi, 2), 0);
	assert_int_equal(
	    kv1_recv_b(d, boot, "engine-p", "xfer-served", "r1", di, 2, err, sizeof(err)), 0);
	/* the same transfer_id again: P removed its entry after the write */
	t0 = pd_now_s();
	assert_int_equal(
	    kv1_recv_b(d, boot, "engine-p", "xfer-served", "r2", di, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Timeout waiting for P side ready."));
	assert_true(pd_now_s() - t0 < 5.0);
	t0 = pd_now_s();
	assert_int_equal(
	    kv1_recv_b(d, boot, "engine-p", "xfer-never", "r3", di, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "Timeout waiting for P side ready."));
	assert_true(pd_now_s() - t0 < 5.0);
	kv1_worker_stats(d, &s);
	assert_int_equal(s.recv_p_timeouts, 2);
	assert_int_equal(s.recv_no_answer, 0);
	kv1_worker_stats(p, &s);
	assert_int_equal(s.unknown_ids, 2);
	kv1_worker_destroy(d);
	kv1_worker_destroy(p);
	kv1_boot_stop(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_handshakes_refused_at_once),
	    cmocka_unit_test(test_unknown_and_served_ids),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
