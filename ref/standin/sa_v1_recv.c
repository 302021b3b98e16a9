/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_recv: the consumer half of the stand-in's V1 connector — pull the prompt's blocks from the
 * prefill, check the KV that landed against the fake model's and apply vLLM's
 * kv_load_failure_policy and --kv-integrity-policy. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_gpu.h"

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
		int ret = sa_v1_alloc_blocks(s, r, k, 0, nb, &blk[k], why, wsz);

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
	struct sa_v1_blkmap m = {s, r->dp, blk, gl, NULL};
	struct sa_kvmap map = {sa_v1_blk_seg, &m, e->win.t0, sa_v1_hstride(s)};
	struct hostrows hr = {NULL, NULL, r->ntok, sa_v1_row_bytes(s)};
	uint64_t ts = pd_now_ns();
	int ret = 0;
	bool same = true;

	if (s->gpu) { /* device blocks: back to host rows first (cudaMemcpy D2H) */
		size_t each = sa_v1_row_bytes(s) * r->ntok * (size_t)s->o.geom.layers;

		hr.k = calloc((size_t)s->o.tp, sizeof(*hr.k));
		hr.v = calloc((size_t)s->o.tp, sizeof(*hr.v));
		ret = hr.k && hr.v ? 0 : -ENOMEM;
		for (int i = 0; !ret && i < s->o.tp; i++) {
			hr.k[i] = malloc(each);
			hr.v[i] = malloc(each);
			ret = !hr.k[i] || !hr.v[i] ? -ENOMEM
			      : sa_gpu_read_blocks(s, s->w[r->dp][i], hr.k[i], hr.v[i], r->ntok,
			                           sa_v1_row_bytes(s), blk[i])
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
		return sa_v1_local_compute(s, r, true) ? 500 : 0;
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
		return sa_v1_local_compute(s, r, true) ? 500 : 0;
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
	return sa_v1_local_compute(s, r, true) ? 500 : 0;
}

/* A Mamba/GDN model loads N-1 tokens and recomputes the last one (sa_hyb_n1_done). */
int sa_v1_prefill_consumer(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
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
