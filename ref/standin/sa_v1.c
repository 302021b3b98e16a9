/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1: the stand-in's V1 connector (gen A, gen B) on ref/kv1 — one worker per (dp, tp rank),
 * the fake model's KV laid out in vLLM's blocks, kv_transfer_params at each step, and the
 * producer / consumer halves of a request with vLLM's log lines and kv_load_failure_policy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_gpu.h"

static size_t row_bytes(const struct sa *s)
{
	return sa_v1_row_bytes(s);
}

/* Where rank k's heads of (layer, token) sit in the request's blocks (sa_kvmap). */
struct blkmap {
	struct sa *s;
	int dp;
	int64_t **blk;
	const struct sa_glay *gl;   /* NULL: one group */
	int64_t *(*bst)[SA_MAX_TP]; /* PP prefill: stage st >= 1's ids (sa_v1_pp.c) */
};

static uint8_t *blk_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct blkmap *m = ud;
	int st = sa_pp_stage(m->s, l);

	return sa_v1_seg_g(m->s, m->dp, st ? m->bst[st - 1] : m->blk, m->gl, value, l, t, k);
}

/* ------------------------------------------------------------------ lifetime */

static void on_xfer(void *ud, double secs, uint64_t bytes, size_t ndesc, bool ok)
{
	struct sa *s = ud;

	if (!ok) {
		atomic_fetch_add(&s->n.transfer_failures, 1);
		return;
	}
	sa_metrics_handoff(s, secs, bytes);
	sa_hist_observe(&s->xfer_time, secs);
	sa_hist_observe(&s->xfer_bytes, (double)bytes);
	sa_hist_observe(&s->xfer_desc, (double)ndesc);
	if (s->gpu) /* the GPU tier reads each hand-off (the first one also opens the handles) */
		pd_info("KV hand-off from %s: %llu bytes, %zu descriptors in %.3f ms (%.2f GB/s)",
		        sa_gpu_location(s), (unsigned long long)bytes, ndesc, secs * 1e3,
		        secs > 0 ? (double)bytes / secs / 1e9 : 0.0);
}

static int v1_start(struct sa *s)
{
	const struct mdl_geom *g = &s->o.geom;
	size_t bs = (size_t)s->o.block_size, row = row_bytes(s);
	size_t nblocks = s->o.num_gpu_blocks > 0 ? (size_t)s->o.num_gpu_blocks
	                                         : 4 * (((size_t)s->o.max_model_len + bs - 1) / bs);
	char boot_url[320], err[768];
	int bport = 0, order[KV1_MAX_BUFS];
	uint8_t bgrp[KV1_MAX_BUFS];

	if (sa_gpu_setup(s) || sa_hyb_start(s))
		return -1;
	s->kv_layout = sa_v1_layout(s->o.kv_mla, s->gen, s->gpu != NULL);
	/* split buffers: every layer's keys before any values, the order the consumer hashes
	 * them in while they land (sa_v1_check.c); one buffer per layer: layer order */
	bool keys_first = s->kv_layout == SA_KV_SPLIT && 2 * (size_t)g->layers <= KV1_MAX_BUFS;

	for (int l = 0; keys_first && l < g->layers; l++) {
		order[l] = 2 * l;
		order[g->layers + l] = 2 * l + 1;
	}

	if (s->producer && cfg_gen_is_b(s->gen) && !s->boot_addr[0]) {
		/* vLLM: MooncakeBootstrapServer("0.0.0.0", port) (mooncake_connector.py @
		 * 00f4240e); --bootstrap-host narrows it (issue 34) */
		const char *bh = s->o.boot_host ? s->o.boot_host : "0.0.0.0";
		int ret =
		    kv1_boot_start(bh, s->bootstrap_port, kv1_shape_of(s->gen), &s->boot, &bport);

		if (ret) {
			fprintf(stderr,
			        "pdkv-standin: error: Mooncake Bootstrap Server cannot bind %s:%d "
			        "(--bootstrap-host, VLLM_MOONCAKE_BOOTSTRAP_PORT): %s\n",
			        bh, s->bootstrap_port, strerror(-ret));
			return -1;
		}
		pd_info("Mooncake Bootstrap Server started at %s:%d", bh, bport);
	}
	snprintf(boot_url, sizeof(boot_url), "http://127.0.0.1:%d", bport);
	if (s->o.boot_host && strcmp(s->o.boot_host, "0.0.0.0") && strcmp(s->o.boot_host, "::"))
		snprintf(boot_url, sizeof(boot_url),
		         strchr(s->o.boot_host, ':') ? "http://[%s]:%d" : "http://%s:%d",
		         s->o.boot_host, bport);
	if (s->boot_addr[0]) /* bootstrap_server_address: register there (standin_main.c) */
		snprintf(boot_url, sizeof(boot_url), "http://%s", s->boot_addr);
	if (sa_pp_check(s))
		return -1;
	for (int d = 0; d < s->o.dp; d++)
		for (int rs = 0; rs < s->o.tp * sa_pp_stages(s); rs++) {
			struct kv1_opts o = {0};
			int r = rs % s->o.tp, st = rs / s->o.tp;
			struct kv1_worker **wp = st ? &s->wst[st - 1][d][r] : &s->w[d][r];

			o.gen = s->gen;
			o.producer = s->producer;
			o.protocol = s->protocol;
			o.base_port = s->bootstrap_port;
			o.dp_index = d;
			o.tp_size = s->o.tp;
			o.tp_rank = r;
			o.engine_id = s->engine_ids[d];
			o.bootstrap_url = s->boot || s->boot_addr[0] ? boot_url : NULL;
			o.abort_timeout_s = s->abort_timeout_s;
			/* the consumer's wait for P's answer: gen A's REQ 60 s; gen B's DEALER
			 * abort timeout + 60 s since vLLM reports failed pulls
			 * (CFG_F_D_FAIL_REPORT: RCVTIMEO in receive_kv_from_single_worker,
			 * mooncake_connector.py @ 00f4240e); earlier gen B rows: pdkv's own
			 * bound of abort timeout + 10 s */
			o.d_fail_report = (s->vi.feat & CFG_F_D_FAIL_REPORT) != 0;
			o.recv_timeout_ms = s->gen == CFG_GEN_A ? 60000
			                    : o.d_fail_report   ? (s->abort_timeout_s + 60) * 1000
			                                        : (s->abort_timeout_s + 10) * 1000;
			o.tp_topology = (s->vi.feat & CFG_F_TP_TOPOLOGY) != 0;
			sa_v1_layout_opts(s->kv_layout, g->layers / sa_pp_stages(s), bs * row, &o);
			o.pp_rank = st; /* PP: this stage's layers, its pp_rank (sa_v1_pp.c) */
			o.pp_size = sa_pp_stages(s);
			o.first_layer = sa_pp_first(s, st);
			if (s->hyb.wire) { /* HMA: registered_group_indices, a list per group */
				o.kv_groups = s->hyb.ng;
				o.buf_group = bgrp;
				sa_hyb_buf_groups(s, bgrp, o.nbufs);
			}
			o.num_blocks = nblocks;
			o.location = sa_gpu_location(s);
			o.write_order = keys_first ? order : NULL;
			o.on_xfer = on_xfer;
			o.ud = s;
			/* hybrid: checked after the receive (use_blocks), window rows only */
			if (s->consumer && s->kv_layout != SA_KV_MLA && s->hyb.ng < 2 &&
			    (!s->o.kv_cache_device || !strcmp(s->o.kv_cache_device, "cpu"))) {
				s->own[d][r] = sa_owners_new(s, d, r, nblocks);
				o.on_piece = s->own[d][r] ? sa_v1_piece : NULL;
				o.piece_ud = s->own[d][r];
			}
			if (kv1_worker_create(&o, wp, err, sizeof(err))) {
				fprintf(stderr,
				        "pdkv-standin: error: dp %d tp rank %d pp rank %d: %s\n", d,
				        r, st, err);
				return -1;
			}
			char ppn[64] = "";

			if (sa_pp_stages(s) > 1) /* PP: the stage and its layers */
				snprintf(ppn, sizeof(ppn), " pp %d (layers %d-%d)", st,
				         o.first_layer,
				         o.first_layer + g->layers / sa_pp_stages(s) - 1);
			pd_info(
			    "dp %d rank %d%s: gen %s, engine %s, segment %s, %d KV buffers x %zu "
			    "blocks x %zu bytes (block_size %d, layout %s), side channel %s",
			    d, r, ppn, cfg_gen_name(s->gen), s->engine_ids[d],
			    kv1_worker_segment(*wp), o.nbufs, nblocks, o.block_len, s->o.block_size,
			    sa_v1_layout_name(s->kv_layout),
			    s->producer ? kv1_worker_side_addr(*wp) : "(consumer: none)");
		}
	return 0;
}

static void v1_stop(struct sa *s)
{
	for (int d = 0; d < SA_MAX_DP; d++)
		for (int r = 0; r < SA_MAX_TP; r++) {
			kv1_worker_destroy(s->w[d][r]);
			s->w[d][r] = NULL;
			for (int st = 0; st < SA_MAX_PP - 1; st++) {
				kv1_worker_destroy(s->wst[st][d][r]);
				s->wst[st][d][r] = NULL;
			}
			sa_owners_free(s->own[d][r]); /* no engine thread calls it now */
			s->own[d][r] = NULL;
		}
	kv1_boot_stop(s->boot);
	s->boot = NULL;
	sa_gpu_teardown(s);
}

static bool v1_ready(struct sa *s)
{
	return s->w[0][0] != NULL && !atomic_load(&s->stopping);
}

void sa_v1_engine_id(struct sa *s, struct sa_req *r)
{
	/* vLLM: completions "cmpl-<id>-<prompt index>", chat "chatcmpl-<id>"; releases with
	 * PR #27987 append a random suffix unless VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1. */
	const char *dis = getenv("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION");
	bool rnd = s->vi.reqid_random && !(dis && (!strcmp(dis, "1") || !strcasecmp(dis, "true")));

	snprintf(r->engine_id, sizeof(r->engine_id), "%.120s%s", r->id, r->chat ? "" : "-0");
	if (rnd) {
		size_t k = strlen(r->engine_id);

		snprintf(r->engine_id + k, sizeof(r->engine_id) - k, "-%08x",
		         (unsigned)(random() ^ (long)pd_now_ns()));
	}
}

/* ------------------------------------------------------------------ producer */

/* Blocks for one rank, waiting while the pool is short as vLLM's scheduler would (up to
 * --kv-block-wait-timeout-ms); the wait is logged at most once a second per process. 0, or
 * -E2BIG (more than the whole pool), -ETIMEDOUT, -ECANCELED, -ENOMEM, with why set. */
static int alloc_blocks(struct sa *s, struct sa_req *r, int k, int st, size_t nb, int64_t **out,
                        char *why, size_t wsz)
{
	static _Atomic uint64_t last_log_ns;
	struct kv1_worker *w = sa_pp_worker(s, r->dp, k, st);
	uint64_t t0 = pd_now_ns(), last;
	bool waited = false;
	int ret;

	*out = malloc((nb ? nb : 1) * sizeof(int64_t));
	if (!*out) {
		snprintf(why, wsz, "out of memory for %zu block ids", nb);
		return -ENOMEM;
	}
	ret = kv1_alloc(w, nb, *out);
	if (ret && s->o.kv_block_wait_ms > 0 && nb <= kv1_worker_num_blocks(w)) {
		last = atomic_load(&last_log_ns);
		if (t0 - last >= 1000000000ull &&
		    atomic_compare_exchange_strong(&last_log_ns, &last, t0))
			pd_info(
			    "request %s: waiting for %zu free KV blocks on dp %d rank %d (pool of "
			    "%zu is busy; up to %d ms)",
			    r->id, nb, r->dp, k, kv1_worker_num_blocks(w), s->o.kv_block_wait_ms);
		ret = kv1_alloc_wait(w, nb, *out, t0 + (uint64_t)s->o.kv_block_wait_ms * 1000000ull,
		                     &waited);
	}
	if (!ret)
		return 0;
	free(*out);
	*out = NULL;
	if (ret == -ETIMEDOUT)
		snprintf(why, wsz,
		         "no free KV blocks on dp %d rank %d within %d ms (%zu needed; raise "
		         "--num-gpu-blocks-override or --kv-block-wait-timeout-ms)",
		         r->dp, k, s->o.kv_block_wait_ms, nb);
	else if (ret == -ECANCELED)
		snprintf(why, wsz, "shutting down while waiting for KV blocks on dp %d rank %d",
		         r->dp, k);
	else
		snprintf(why, wsz,
		         "no free KV blocks on dp %d rank %d (%zu needed; raise "
		         "--num-gpu-blocks-override)",
		         r->dp, k, nb);
	return ret == -E2BIG ? -ENOSPC : ret;
}

/* Allocates the request's blocks on every rank and computes the KV straight into them. */
static int produce(struct sa *s, struct sa_req *r)
{
	int d = r->dp, ret;
	uint64_t t0 = pd_now_ns(), ts = t0;
	struct blkmap m = {s, r->dp, r->blk, &r->glay, r->bst};
	struct sa_kvmap map = {blk_seg, &m, NULL, sa_v1_hstride(s)};
	size_t *w0 = NULL;

	sa_hyb_layout(s, r->ntok, false, &r->glay); /* every group, every block */
	r->nblk = r->glay.total;
	if (sa_hyb_t0(s, r->ntok, &w0))
		return -ENOMEM;
	map.t0 = w0;
	for (int ks = 0; ks < s->o.tp * sa_pp_stages(s); ks++) { /* every rank of every stage */
		char why[256];
		int k = ks % s->o.tp, st = ks / s->o.tp;

		ret = alloc_blocks(s, r, k, st, r->nblk, st ? &r->bst[st - 1][k] : &r->blk[k], why,
		                   sizeof(why));
		if (ret) {
			pd_err("request %s: %s", r->id, why);
			return ret;
		}
	}
	sa_stage(r, "alloc", &ts);
	/* host blocks: generated in place; GPU blocks: the seed from a hash-only pass, the rows
	 * by the GPU kernel straight into the device blocks */
	ret = sa_kv_gen(&s->o.geom, r->tokens, r->ntok, s->o.tp, s->gpu ? NULL : &map, &r->seed,
	                NULL);
	free(w0);
	if (ret)
		return ret;
	for (int k = 0; s->gpu && k < s->o.tp; k++) {
		int hs = s->o.geom.kv_heads / s->o.tp;

		if (sa_gpu_fill_blocks(s, s->w[d][k], r->tokens, r->ntok, k * hs, hs, r->blk[k]))
			return -EIO;
	}
	sa_stage(r, "gen+seed", &ts);
	mdl_pace(t0, s->o.ns_per_token, r->ntok);
	sa_stage(r, "pace", &ts);
	atomic_fetch_add(&s->n.computed, r->ntok);
	if (s->o.fault.corrupt) {
		if (s->gpu)
			sa_gpu_flip(s, kv1_block(s->w[d][0], 0, r->blk[0][0]) + 7, 0x40);
		else
			kv1_block(s->w[d][0], 0, r->blk[0][0])[7] ^= 0x40;
		pd_info("fault corrupt: request %s: flipped bit 6 of a key byte in block %lld",
		        r->id, (long long)r->blk[0][0]);
	}
	return 0;
}

/* Which P-side tracking vLLM does for this request; logs its warnings. */
static bool track_send(struct sa *s, struct sa_req *r)
{
	if (!s->producer || !r->kvp.present || !r->kvp.do_remote_decode)
		return false;
	if (s->gen == CFG_GEN_A) {
		snprintf(r->send_key, sizeof(r->send_key), "%s", r->engine_id);
		return true;
	}
	if (!r->kvp.transfer_id[0]) {
		/* every gen-B prefill since #31034 (mooncake_connector.py @ 0d6ccf68f, the b0
		 * shape) */
		pd_warn("Missing transfer_id in kv_transfer_params from router!");
		return false;
	}
	snprintf(r->send_key, sizeof(r->send_key), "%s", r->kvp.transfer_id);
	return true;
}

/* A local prefill: the fake model's KV is only hashed (nothing keeps it), then paced. */
static int local_compute(struct sa *s, struct sa_req *r, bool recompute)
{
	uint64_t t0 = pd_now_ns(), ts = t0;
	size_t *w0 = NULL;
	struct sa_kvmap win = {NULL, NULL, NULL, 0}; /* hybrid: a sliding layer's window only */
	int ret;

	if (r->n1_full) { /* Mamba/GDN decode recomputing: the whole prompt */
		r->ntok = r->n1_full;
		r->n1_full = 0;
	}
	ret = sa_hyb_t0(s, r->ntok, &w0);

	win.t0 = w0;
	if (!ret)
		ret =
		    sa_kv_gen(&s->o.geom, r->tokens, r->ntok, 1, w0 ? &win : NULL, &r->seed, NULL);
	free(w0);

	sa_stage(r, "gen+seed", &ts);
	if (!ret) {
		mdl_pace(t0, s->o.ns_per_token, r->ntok);
		sa_stage(r, "pace", &ts);
		atomic_fetch_add(&s->n.computed, r->ntok);
	}
	if (ret)
		return ret;
	atomic_fetch_add(&s->n.src_local, r->ntok);
	if (recompute) {
		r->recomputed = r->ntok;
		atomic_fetch_add(&s->n.recomputed, r->ntok);
	}
	return 0;
}

static int prefill_producer(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	int ret;

	r->send_tracked = track_send(s, r);
	if (r->send_tracked && sa_hyb_remote_tokens(s, r->ntok) != r->ntok) {
		/* Mamba/GDN: on_new_request drops the last prompt token (#46807) */
		pd_dbg("request %s: Mamba/GDN model: prefilling %zu of %zu prompt tokens for the "
		       "decode",
		       r->id, r->ntok - 1, r->ntok);
		r->ntok--;
	}
	if (r->send_tracked && s->gen == CFG_GEN_A)
		for (int k = 0; k < s->o.tp; k++)
			kv1_send_expect(s->w[r->dp][k], r->send_key);
	if (!r->send_tracked) {
		ret = local_compute(s, r, false);
		r->kv_note = "computed";
		goto out;
	}
	ret = produce(s, r);
	if (ret)
		goto out;
	r->t_kv_ready = pd_now_ns();
	atomic_fetch_add(&s->n.src_local, r->ntok);
	r->kv_note = "computed+blocks";
	if (s->o.fault.delay_ms) {
		pd_info("fault delay: request %s sleeps %d ms before its blocks are ready", r->id,
		        s->o.fault.delay_ms);
		pd_sleep_ms(s->o.fault.delay_ms);
	}
out:
	if (ret) {
		if (r->send_tracked)
			for (int ks = 0; ks < s->o.tp * sa_pp_stages(s); ks++)
				kv1_send_discard(sa_pp_worker(s, r->dp, ks % s->o.tp, ks / s->o.tp),
				                 r->send_key);
		r->send_tracked = false;
		*msg_alloc = pd_asprintf("KV blocks for request %s: %s", r->id, strerror(-ret));
		*msg = NULL;
		return 500;
	}
	return 0;
}

static void v1_finished(struct sa *s, struct sa_req *r, const char *finish)
{
	bool length = finish && !strcmp(finish, "length");
	int d = r->dp;

	if (!r->send_tracked)
		return;
	r->send_tracked = false;
	for (int k = 0; k < s->o.tp; k++) {
		if (!r->blk[k])
			continue;
		if (length && !s->o.fault.drop && r->glay.ng > 1) {
			size_t gcnt[SA_MAX_GROUPS], n;
			int64_t *cl = malloc(r->nblk * sizeof(*cl));

			if (!cl) {
				kv1_send_discard(s->w[d][k], r->send_key);
				kv1_free(s->w[d][k], r->blk[k], r->nblk);
			} else {
				n = sa_hyb_clip_send(s, s->w[d][k], r->ntok, &r->glay, r->blk[k],
				                     cl, gcnt);
				kv1_send_ready_g(s->w[d][k], r->send_key, cl, n, gcnt, r->glay.ng);
				free(cl);
			}
		} else if (length && !s->o.fault.drop) {
			kv1_send_ready(s->w[d][k], r->send_key, r->blk[k], r->nblk);
		} else {
			kv1_send_discard(s->w[d][k], r->send_key);
			kv1_free(s->w[d][k], r->blk[k], r->nblk);
		}
		free(r->blk[k]);
		r->blk[k] = NULL;
		for (int st = 1; st < sa_pp_stages(s); st++) { /* PP: the other stages' blocks */
			struct kv1_worker *w = s->wst[st - 1][d][k];
			int64_t **b = &r->bst[st - 1][k];

			if (!*b)
				continue;
			if (length && !s->o.fault.drop) {
				kv1_send_ready(w, r->send_key, *b, r->nblk);
			} else {
				kv1_send_discard(w, r->send_key);
				kv1_free(w, *b, r->nblk);
			}
			free(*b);
			*b = NULL;
		}
	}
	if (s->o.fault.drop)
		pd_info("fault drop: request %s: blocks not offered to the decode", r->id);
	atomic_fetch_add(&s->n.inserted, 1);
	/* gen A returns the side channel only when finished by max_tokens (vLLM's
	 * FINISHED_LENGTH_CAPPED); gen B returns nothing. */
	if (length && s->gen == CFG_GEN_A)
		r->kvtp_out =
		    pd_asprintf("{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
		                "\"remote_host\":\"%s\",\"remote_port\":%d}",
		                kv1_worker_ip(s->w[d][0]), s->bootstrap_port + d * s->o.tp);
	if (!length)
		pd_info("request %s finished by %s on the prefill: no KV offered (gen B: decode's "
		        "pull is refused at once; decode recomputes or fails by its "
		        "kv_load_failure_policy)",
		        r->id, finish ? finish : "?");
	if (length)
		sa_maybe_crash(s, "right after offering the blocks (decode may be mid-transfer)",
		               r->id);
}

/* ------------------------------------------------------------------ consumer */

static bool params_valid(struct sa *s, const struct sa_req *r)
{
	if (!r->kvp.do_remote_prefill)
		return false;
	if (s->gen == CFG_GEN_A)
		return r->kvp.remote_host[0] && r->kvp.has_port;
	return r->kvp.remote_engine_id[0] && r->kvp.bootstrap[0] && r->kvp.transfer_id[0];
}

/* Takes every rank's blocks; 0 or -errno with why set. */
static int take_blocks(struct sa *s, struct sa_req *r, int64_t **blk, size_t nb, char *why,
                       size_t wsz)
{
	for (int k = 0; k < s->o.tp; k++) {
		int ret = alloc_blocks(s, r, k, 0, nb, &blk[k], why, wsz);

		if (ret)
			return ret;
	}
	return 0;
}

/* Pulls every rank's blocks (gl: one list per KV-cache group); 0 or -errno with why set. */
static int fetch(struct sa *s, struct sa_req *r, int64_t **blk, size_t nb, const struct sa_glay *gl,
                 char *why, size_t wsz)
{
	for (int k = 0; k < s->o.tp; k++) {
		struct kv1_worker *w = s->w[r->dp][k];
		int ret;

		if (s->gen == CFG_GEN_A)
			ret = kv1_recv_a(w, r->kvp.remote_host, (int)r->kvp.remote_port,
			                 r->engine_id, blk[k], nb, why, wsz);
		else if (gl->ng > 1)
			ret = kv1_recv_b_g(w, r->kvp.bootstrap, r->kvp.remote_engine_id,
			                   r->kvp.transfer_id, r->engine_id, blk[k], nb, gl->cnt,
			                   gl->ng, why, wsz);
		else
			ret = kv1_recv_b(w, r->kvp.bootstrap, r->kvp.remote_engine_id,
			                 r->kvp.transfer_id, r->engine_id, blk[k], nb, why, wsz);
		if (ret)
			return ret;
	}
	return 0;
}

/* The fake model's checksum of the prompt's KV, computed from the tokens alone while the blocks
 * are in flight, so checking the received KV costs one hash of it after the transfer. */
struct expect {
	struct sa *s;
	const struct sa_req *r;
	uint64_t sum;
	int ret;
	struct sa_kvjob *job; /* NULL: not started (no memory), computed when needed */
	bool started;
	struct sa_kvmap win; /* hybrid: t0 = each layer's first kept position (else NULL) */
};

/* below the transfer's threads: it fills idle cycles, it must not slow the transfer */
static void expect_start(struct expect *e)
{
	e->job = sa_kv_gen_start(&e->s->o.geom, e->r->tokens, e->r->ntok, 1,
	                         e->win.t0 ? &e->win : NULL, true);
	e->started = e->job != NULL;
}

/* The expected checksum: what the workers left is done here, at the request's priority (a
 * streamed first token waits for it, so a busy host must not starve it). */
static void expect_finish(struct expect *e)
{
	if (e->started)
		sa_kv_gen_finish(e->job, &e->sum);
	else
		e->ret = sa_kv_gen(&e->s->o.geom, e->r->tokens, e->r->ntok, 1,
		                   e->win.t0 ? &e->win : NULL, &e->sum, NULL);
	e->job = NULL;
	e->started = false;
}

/* Host copies of device blocks, rank k's rows [L][T][hs x D x B] (sa_kvmap). */
struct hostrows {
	uint8_t **k, **v;
	size_t n, row;
};

static uint8_t *host_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct hostrows *h = ud;

	return (value ? h->v[k] : h->k[k]) + ((size_t)l * h->n + t) * h->row;
}

/* Reads the KV actually in the blocks, seeds generation from it and checks it against the
 * fake model's checksum (a mismatch is counted, the text follows the blocks). */
static int use_blocks(struct sa *s, struct sa_req *r, int64_t **blk, const struct sa_glay *gl,
                      struct expect *e)
{
	struct blkmap m = {s, r->dp, blk, gl, NULL};
	struct sa_kvmap map = {blk_seg, &m, e->win.t0, sa_v1_hstride(s)};
	struct hostrows hr = {NULL, NULL, r->ntok, row_bytes(s)};
	uint64_t ts = pd_now_ns();
	int ret = 0;
	bool same = true;

	if (s->gpu) { /* device blocks: back to host rows first (cudaMemcpy D2H) */
		size_t each = row_bytes(s) * r->ntok * (size_t)s->o.geom.layers;

		hr.k = calloc((size_t)s->o.tp, sizeof(*hr.k));
		hr.v = calloc((size_t)s->o.tp, sizeof(*hr.v));
		ret = hr.k && hr.v ? 0 : -ENOMEM;
		for (int i = 0; !ret && i < s->o.tp; i++) {
			hr.k[i] = malloc(each);
			hr.v[i] = malloc(each);
			ret = !hr.k[i] || !hr.v[i] ? -ENOMEM
			      : sa_gpu_read_blocks(s, s->w[r->dp][i], hr.k[i], hr.v[i], r->ntok,
			                           row_bytes(s), blk[i])
			          ? -EIO
			          : 0;
		}
		map = (struct sa_kvmap){host_seg, &hr, NULL, 0};
	}
	if (!ret)
		ret = sa_kv_scan(&s->o.geom, r->tokens, r->ntok, s->o.tp, &map, &r->seed,
		                 e->started ? NULL : &(bool){true});
	for (int i = 0; s->gpu && i < s->o.tp; i++) {
		free(hr.k ? hr.k[i] : NULL);
		free(hr.v ? hr.v[i] : NULL);
	}
	if (s->gpu) {
		free(hr.k);
		free(hr.v);
	}

	sa_stage(r, "hash", &ts);
	if (ret)
		return ret;
	if (e->started) {
		expect_finish(e);
		sa_stage(r, "expect_wait", &ts);
		if (e->ret)
			return e->ret;
		same = e->sum == r->seed;
	}
	if (!same) {
		r->kv_check_failed = true;
		atomic_fetch_add(&s->n.checksum_failures, 1);
		pd_warn("request %s: the KV in the received blocks is not the prompt's (checksum "
		        "%016llx, expected %016llx): decoding from it anyway, as vLLM would",
		        r->id, (unsigned long long)r->seed, (unsigned long long)e->sum);
	}
	return 0;
}

/* Host blocks after a successful receive: the expected checksum (the expect thread) against
 * the hash the check made of what landed. Streamed: the check is handed over to the request
 * (*vp = NULL, blk taken) and the first token follows the expected checksum. Otherwise the
 * text follows the blocks and a mismatch is counted, as vLLM would decode from them. */
static int check_blocks(struct sa *s, struct sa_req *r, struct sa_verify **vp, int64_t **blk,
                        struct expect *e, uint64_t *ts, uint64_t t_arrived)
{
	uint64_t got = 0;
	int ret;

	expect_finish(e);
	sa_stage(r, "expect_wait", ts);
	if (e->ret)
		return e->ret;
	if (r->stream) {
		sa_check_hand_over(r, *vp, blk, e->sum);
		*vp = NULL;
		return 0;
	}
	ret = sa_check_join(*vp, e->sum, &got);
	sa_stage(r, "check_wait", ts);
	if (ret)
		return ret;
	r->seed = got;
	r->t_kv_verified = *ts; /* both checksums known and compared */
	sa_metrics_handoff(s, (double)(r->t_kv_verified - t_arrived) / 1e9,
	                   mdl_kv_bytes_per_token(&s->o.geom, s->o.geom.kv_heads) * r->ntok);
	if (got != e->sum) {
		r->kv_check_failed = true;
		atomic_fetch_add(&s->n.checksum_failures, 1);
		pd_warn("request %s: the KV in the received blocks is not the prompt's (checksum "
		        "%016llx, expected %016llx): decoding from it anyway, as vLLM would",
		        r->id, (unsigned long long)got, (unsigned long long)e->sum);
	}
	return 0;
}

static int consumer_pull(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	int64_t *blk[SA_MAX_TP] = {0};
	struct sa_glay gl; /* the window-clipped lists D asks for (get_sw_clipped_blocks) */
	size_t nb, *t0 = NULL;
	char why[768] = "";
	int ret;

	sa_hyb_layout(s, r->ntok, true, &gl);
	nb = gl.total;

	if (!params_valid(s, r)) {
		if (r->kvp.present)
			pd_warn("Got invalid KVTransferParams: %s. This request will not utilize "
			        "KVTransfer",
			        r->kvp.text ? r->kvp.text : "{}");
		r->kv_note = "recomputed(no params)";
		return local_compute(s, r, true) ? 500 : 0;
	}
	atomic_fetch_add(&s->n.ext_queries, r->ntok);
	atomic_fetch_add(&s->n.ext_hits, r->ntok);
	if (s->o.fault.delay_ms) {
		pd_info("fault delay: request %s sleeps %d ms before pulling", r->id,
		        s->o.fault.delay_ms);
		pd_sleep_ms(s->o.fault.delay_ms);
	}
	uint64_t ts = pd_now_ns();
	struct expect e = {s, r, 0, 0, NULL, false, {NULL, NULL, NULL, 0}};

	struct sa_verify *v = NULL;

	if (sa_hyb_t0(s, r->ntok, &t0))
		return 500;
	e.win.t0 = t0;
	expect_start(&e);
	ret = take_blocks(s, r, blk, nb, why, sizeof(why));
	/* host blocks: hashed layer by layer as the WRITEs land (sa_v1_check.c) */
	if (!ret && !s->gpu && !t0)
		v = sa_check_start(s, r, blk, nb);
	if (!ret)
		ret = fetch(s, r, blk, nb, &gl, why, sizeof(why));
	sa_stage(r, "fetch", &ts);
	/* P pushes: the WRITE is the prefill's part of the hand-off (its histogram); the
	 * decode's part runs from the blocks' arrival to the verified KV */
	uint64_t t_arrived = ts;

	if (v)
		sa_check_transfer_done(v, !ret, t_arrived);
	if (!ret)
		sa_maybe_crash(s, "after the transfer, before using the KV", r->id);
	if (!ret && v) {
		ret = check_blocks(s, r, &v, blk, &e, &ts, t_arrived);
		if (ret)
			snprintf(why, sizeof(why), "cannot read the received blocks: %s",
			         strerror(-ret));
	} else if (!ret) {
		ret = use_blocks(s, r, blk, &gl, &e);
		sa_stage(r, "use_blocks", &ts);
		r->t_kv_verified = ts;
		if (!ret)
			sa_metrics_handoff(s, (double)(ts - t_arrived) / 1e9,
			                   mdl_kv_bytes_per_token(&s->o.geom, s->o.geom.kv_heads) *
			                       r->ntok);
		if (ret)
			snprintf(why, sizeof(why), "out of memory reading the blocks");
	}
	sa_check_free(v);
	if (e.started)
		expect_finish(&e);
	free(t0);
	for (int k = 0; k < s->o.tp; k++)
		if (blk[k]) {
			kv1_free(s->w[r->dp][k], blk[k], nb);
			free(blk[k]);
		}
	if (!ret && r->kv_check_failed && s->o.kv_integrity_policy == SA_KVI_FAIL) {
		*msg_alloc = pd_asprintf("KV for request %s failed the decode's integrity check; "
		                         "--kv-integrity-policy fail",
		                         r->id);
		*msg = NULL;
		return 500;
	}
	if (!ret && r->kv_check_failed && s->o.kv_integrity_policy == SA_KVI_RECOMPUTE) {
		pd_warn(
		    "request %s: --kv-integrity-policy recompute: recomputing %zu prompt tokens",
		    r->id, r->ntok);
		r->kv_note = "recomputed(kv check failed)";
		return local_compute(s, r, true) ? 500 : 0;
	}
	if (!ret) {
		uint64_t t0 = pd_now_ns();

		mdl_pace(t0, s->o.ns_per_token, 1); /* vLLM recomputes the last prompt token */
		r->reused = r->ntok;
		r->cached_tokens = r->ntok - 1;
		atomic_fetch_add(&s->n.reused, r->ntok);
		atomic_fetch_add(&s->n.src_external, r->ntok - 1);
		atomic_fetch_add(&s->n.src_local, 1);
		atomic_fetch_add(&s->n.cached_tokens, r->ntok - 1);
		r->kv_note = "transferred";
		return 0;
	}
	atomic_fetch_add(&s->n.failed_recvs, 1);
	atomic_fetch_add(&s->n.misses, 1);
	pd_err("%s", why);
	if (s->policy_fail) {
		*msg_alloc = pd_asprintf("KV transfer for request %s failed (%s); "
		                         "kv_load_failure_policy fail",
		                         r->id, why);
		*msg = NULL;
		return 500;
	}
	pd_warn("request %s: KV load failed; kv_load_failure_policy recompute: recomputing %zu "
	        "prompt tokens",
	        r->id, r->ntok);
	r->kv_note = "recomputed(load failure)";
	return local_compute(s, r, true) ? 500 : 0;
}

/* A Mamba/GDN model loads N-1 tokens and recomputes the last one (sa_hyb_n1_done). */
static int prefill_consumer(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	size_t n = sa_hyb_remote_tokens(s, r->ntok);
	int ret;

	if (n == r->ntok || !params_valid(s, r))
		return consumer_pull(s, r, msg, msg_alloc);
	r->n1_full = r->ntok;
	r->ntok = n;
	ret = consumer_pull(s, r, msg, msg_alloc);
	if (r->n1_full && !ret) /* loaded (a recompute restored ntok itself) */
		ret = sa_hyb_n1_done(s, r) ? 500 : 0;
	if (r->n1_full) { /* failed */
		r->ntok = r->n1_full;
		r->n1_full = 0;
	}
	return ret;
}

static int v1_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	*msg = NULL;
	*msg_alloc = NULL;
	if (s->producer && r->kvp.present && r->kvp.do_remote_decode)
		return prefill_producer(s, r, msg, msg_alloc);
	if (s->consumer && r->kvp.present && r->kvp.do_remote_prefill)
		return prefill_consumer(s, r, msg, msg_alloc);
	if (s->consumer && !s->producer)
		return prefill_consumer(s, r, msg, msg_alloc);
	if (s->producer && r->kvp.present)
		track_send(s, r); /* its warnings */
	r->kv_note = "computed";
	return local_compute(s, r, false) ? 500 : 0;
}

const struct sa_conn sa_conn_v1 = {
    .name = "v1",
    .start = v1_start,
    .stop = v1_stop,
    .ready = v1_ready,
    .prefill = v1_prefill,
    .finished = v1_finished,
    .metrics = NULL,
};
