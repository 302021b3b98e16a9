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

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_gpu.h"

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
	size_t bs = (size_t)s->o.block_size, row = sa_v1_row_bytes(s);
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
	const char *dis = pd_env_str("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION"); /* 0|1|false|true */
	bool rnd = s->vi.reqid_random && !(dis && (!strcmp(dis, "1") || !strcasecmp(dis, "true")));

	snprintf(r->engine_id, sizeof(r->engine_id), "%.120s%s", r->id, r->chat ? "" : "-0");
	if (rnd) {
		size_t k = strlen(r->engine_id);

		snprintf(r->engine_id + k, sizeof(r->engine_id) - k, "-%08x",
		         (unsigned)(random() ^ (long)pd_now_ns()));
	}
}

/* ------------------------------------------------------------------ producer */

/* Allocates the request's blocks on every rank and computes the KV straight into them. */
static int produce(struct sa *s, struct sa_req *r)
{
	int d = r->dp, ret;
	uint64_t t0 = pd_now_ns(), ts = t0;
	struct sa_v1_blkmap m = {s, r->dp, r->blk, &r->glay, r->bst};
	struct sa_kvmap map = {sa_v1_blk_seg, &m, NULL, sa_v1_hstride(s)};
	size_t *w0 = NULL;

	sa_hyb_layout(s, r->ntok, false, &r->glay); /* every group, every block */
	r->nblk = r->glay.total;
	if (sa_hyb_t0(s, r->ntok, &w0))
		return -ENOMEM;
	map.t0 = w0;
	for (int ks = 0; ks < s->o.tp * sa_pp_stages(s); ks++) { /* every rank of every stage */
		char why[256];
		int k = ks % s->o.tp, st = ks / s->o.tp;

		ret = sa_v1_alloc_blocks(s, r, k, st, r->nblk, st ? &r->bst[st - 1][k] : &r->blk[k],
		                         why, sizeof(why));
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
		ret = sa_v1_local_compute(s, r, false);
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

static int v1_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	*msg = NULL;
	*msg_alloc = NULL;
	if (s->producer && r->kvp.present && r->kvp.do_remote_decode)
		return prefill_producer(s, r, msg, msg_alloc);
	if (s->consumer && r->kvp.present && r->kvp.do_remote_prefill)
		return sa_v1_prefill_consumer(s, r, msg, msg_alloc);
	if (s->consumer && !s->producer)
		return sa_v1_prefill_consumer(s, r, msg, msg_alloc);
	if (s->producer && r->kvp.present)
		track_send(s, r); /* its warnings */
	r->kv_note = "computed";
	return sa_v1_local_compute(s, r, false) ? 500 : 0;
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
