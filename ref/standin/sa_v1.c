/* sa_v1: the stand-in's V1 connector (gen A, gen B) on ref/kv1 — one worker per (dp, tp rank),
 * the fake model's KV laid out in vLLM's blocks, kv_transfer_params at each step, and the
 * producer / consumer halves of a request with vLLM's log lines and kv_load_failure_policy. */
#include <errno.h>
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
	const struct mdl_geom *g = &s->o.geom;

	return (size_t)(g->kv_heads / s->o.tp) * (size_t)g->head_dim * (size_t)g->dtype_bytes;
}

static size_t nblocks_for(const struct sa *s, size_t ntok)
{
	return (ntok + (size_t)s->o.block_size - 1) / (size_t)s->o.block_size;
}

/* Copies one rank's shard [L, T, hs, D] (keys, values) into / out of the blocks. Buffer order is
 * vLLM's: [L0.K, L0.V, L1.K, ...], or [L0, L1, ...] with MLA where a token row is K then V. */
static void shard_blocks(struct sa *s, struct kv1_worker *w, uint8_t *keys, uint8_t *values,
                         size_t T, const int64_t *blk, bool to_blocks)
{
	size_t row = row_bytes(s), bs = (size_t)s->o.block_size;

	for (int l = 0; l < s->o.geom.layers; l++)
		for (size_t b = 0; b * bs < T; b++) {
			size_t nt = T - b * bs < bs ? T - b * bs : bs;
			uint8_t *k = keys + ((size_t)l * T + b * bs) * row;
			uint8_t *v = values + ((size_t)l * T + b * bs) * row;

			if (s->o.kv_mla) {
				uint8_t *blkp = kv1_block(w, l, blk[b]);

				for (size_t t = 0; t < nt; t++) {
					uint8_t *dk = blkp + t * 2 * row, *dv = dk + row;

					if (to_blocks) {
						memcpy(dk, k + t * row, row);
						memcpy(dv, v + t * row, row);
					} else {
						memcpy(k + t * row, dk, row);
						memcpy(v + t * row, dv, row);
					}
				}
				continue;
			}
			uint8_t *bk = kv1_block(w, 2 * l, blk[b]),
			        *bv = kv1_block(w, 2 * l + 1, blk[b]);

			if (to_blocks) {
				memcpy(bk, k, nt * row);
				memcpy(bv, v, nt * row);
			} else {
				memcpy(k, bk, nt * row);
				memcpy(v, bv, nt * row);
			}
		}
}

/* ------------------------------------------------------------------ lifetime */

static void on_xfer(void *ud, double secs, uint64_t bytes, size_t ndesc, bool ok)
{
	struct sa *s = ud;

	if (!ok) {
		atomic_fetch_add(&s->n.transfer_failures, 1);
		return;
	}
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
	char boot_url[64], err[768];
	int bport = 0;

	if (sa_gpu_setup(s))
		return -1;

	if (s->producer && cfg_gen_is_b(s->gen)) {
		int ret = kv1_boot_start(NULL, s->bootstrap_port,
		                         s->gen == CFG_GEN_BN ? KV1_SHAPE_BN : KV1_SHAPE_B0,
		                         &s->boot, &bport);

		if (ret) {
			fprintf(
			    stderr,
			    "pdkv-standin: error: Mooncake Bootstrap Server cannot bind 0.0.0.0:%d "
			    "(VLLM_MOONCAKE_BOOTSTRAP_PORT): %s\n",
			    s->bootstrap_port, strerror(-ret));
			return -1;
		}
		pd_info("Mooncake Bootstrap Server started at 0.0.0.0:%d", bport);
	}
	snprintf(boot_url, sizeof(boot_url), "http://127.0.0.1:%d", bport);
	for (int d = 0; d < s->o.dp; d++)
		for (int r = 0; r < s->o.tp; r++) {
			struct kv1_opts o = {0};

			o.gen = s->gen;
			o.producer = s->producer;
			o.protocol = s->protocol;
			o.base_port = s->bootstrap_port;
			o.dp_index = d;
			o.tp_size = s->o.tp;
			o.tp_rank = r;
			o.engine_id = s->engine_ids[d];
			o.bootstrap_url = s->boot ? boot_url : NULL;
			o.abort_timeout_s = s->abort_timeout_s;
			o.recv_timeout_ms =
			    s->gen == CFG_GEN_A ? 60000 : (s->abort_timeout_s + 10) * 1000;
			o.nbufs = s->o.kv_mla ? g->layers : 2 * g->layers;
			o.block_len = bs * row * (s->o.kv_mla ? 2 : 1);
			o.num_blocks = nblocks;
			o.location = sa_gpu_location(s);
			o.on_xfer = on_xfer;
			o.ud = s;
			if (kv1_worker_create(&o, &s->w[d][r], err, sizeof(err))) {
				fprintf(stderr, "pdkv-standin: error: dp %d tp rank %d: %s\n", d, r,
				        err);
				return -1;
			}
			pd_info("dp %d rank %d: gen %s, engine %s, segment %s, %d KV buffers x %zu "
			        "blocks x %zu bytes (block_size %d), side channel %s",
			        d, r, cfg_gen_name(s->gen), s->engine_ids[d],
			        kv1_worker_segment(s->w[d][r]), o.nbufs, nblocks, o.block_len,
			        s->o.block_size,
			        s->producer ? kv1_worker_side_addr(s->w[d][r])
			                    : "(consumer: none)");
		}
	return 0;
}

static void v1_stop(struct sa *s)
{
	for (int d = 0; d < SA_MAX_DP; d++)
		for (int r = 0; r < SA_MAX_TP; r++) {
			kv1_worker_destroy(s->w[d][r]);
			s->w[d][r] = NULL;
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

static int produce(struct sa *s, struct sa_req *r, struct mdl_kv *sh)
{
	int d = r->dp;

	r->nblk = nblocks_for(s, r->ntok);
	for (int k = 0; k < s->o.tp; k++) {
		r->blk[k] = malloc(r->nblk * sizeof(int64_t));
		if (!r->blk[k] || kv1_alloc(s->w[d][k], r->nblk, r->blk[k])) {
			free(r->blk[k]);
			r->blk[k] = NULL;
			pd_err("request %s: no free KV blocks on dp %d rank %d (%zu needed; raise "
			       "--num-gpu-blocks-override)",
			       r->id, d, k, r->nblk);
			return -ENOSPC;
		}
		if (s->gpu) {
			int hs = s->o.geom.kv_heads / s->o.tp;

			if (sa_gpu_fill_blocks(s, s->w[d][k], r->tokens, r->ntok, k * hs, hs,
			                       r->blk[k]))
				return -EIO;
		} else {
			shard_blocks(s, s->w[d][k], sh[k].keys, sh[k].values, r->ntok, r->blk[k],
			             true);
		}
	}
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
		if (s->gen == CFG_GEN_BN)
			pd_warn("Missing transfer_id in kv_transfer_params from router!");
		else
			pd_warn("Got invalid KVTransferParams: %s. This request will not utilize "
			        "KVTransfer",
			        r->kvp.text);
		return false;
	}
	snprintf(r->send_key, sizeof(r->send_key), "%s", r->kvp.transfer_id);
	return true;
}

static void maybe_crash(struct sa *s, const char *where, const char *id)
{
	uint64_t seq;

	if (!s->o.fault.crash)
		return;
	seq = atomic_fetch_add(&s->n.fault_seq, 1) + 1;
	if (seq < (uint64_t)s->o.fault.crash_after)
		return;
	pd_err("fault crash: request %s is number %llu, exiting %s", id, (unsigned long long)seq,
	       where);
	_exit(1);
}

static int compute_shards(struct sa *s, const struct sa_req *r, struct mdl_kv *sh, int nsh,
                          uint64_t *seed, bool pace)
{
	const struct mdl_geom *g = &s->o.geom;
	int hs = g->kv_heads / nsh, ret = 0;
	uint64_t t0 = pd_now_ns();
	size_t each;
	uint8_t *fk, *fv;

	for (int i = 0; i < nsh; i++)
		if ((ret = mdl_kv_compute(g, r->tokens, r->ntok, i * hs, hs, i, nsh, &sh[i])))
			return ret;
	each = sh[0].bytes_each * (size_t)nsh;
	fk = malloc(each);
	fv = malloc(each);
	if (!fk || !fv) {
		free(fk);
		free(fv);
		return -ENOMEM;
	}
	for (int i = 0; i < nsh; i++) {
		mdl_kv_place_shard(g, r->ntok, sh[i].keys, i * hs, hs, fk);
		mdl_kv_place_shard(g, r->ntok, sh[i].values, i * hs, hs, fv);
	}
	*seed = mdl_kv_checksum(fk, fv, each);
	free(fk);
	free(fv);
	if (pace) {
		mdl_pace(t0, s->o.ns_per_token, r->ntok);
		atomic_fetch_add(&s->n.computed, r->ntok);
	}
	return 0;
}

static void free_shards(struct mdl_kv *sh, int n)
{
	for (int i = 0; i < n; i++)
		mdl_kv_free(&sh[i]);
}

static int local_compute(struct sa *s, struct sa_req *r, bool recompute)
{
	struct mdl_kv sh[SA_MAX_TP];
	int ret;

	memset(sh, 0, sizeof(sh));
	ret = compute_shards(s, r, sh, 1, &r->seed, true);
	free_shards(sh, 1);
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
	struct mdl_kv sh[SA_MAX_TP];
	int ret;

	memset(sh, 0, sizeof(sh));
	r->send_tracked = track_send(s, r);
	if (r->send_tracked && s->gen == CFG_GEN_A)
		for (int k = 0; k < s->o.tp; k++)
			kv1_send_expect(s->w[r->dp][k], r->send_key);
	ret = compute_shards(s, r, sh, s->o.tp, &r->seed, true);
	if (ret)
		goto out;
	atomic_fetch_add(&s->n.src_local, r->ntok);
	r->kv_note = "computed";
	if (r->send_tracked) {
		if (s->o.fault.delay_ms) {
			pd_info("fault delay: request %s sleeps %d ms before its blocks are ready",
			        r->id, s->o.fault.delay_ms);
			pd_sleep_ms(s->o.fault.delay_ms);
		}
		ret = produce(s, r, sh);
		r->kv_note = "computed+blocks";
	}
out:
	free_shards(sh, s->o.tp);
	if (ret) {
		if (r->send_tracked)
			for (int k = 0; k < s->o.tp; k++)
				kv1_send_discard(s->w[r->dp][k], r->send_key);
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
		if (length && !s->o.fault.drop) {
			kv1_send_ready(s->w[d][k], r->send_key, r->blk[k], r->nblk);
		} else {
			kv1_send_discard(s->w[d][k], r->send_key);
			kv1_free(s->w[d][k], r->blk[k], r->nblk);
		}
		free(r->blk[k]);
		r->blk[k] = NULL;
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
		pd_info("request %s finished by %s on the prefill: no KV offered (decode will "
		        "recompute)",
		        r->id, finish ? finish : "?");
	if (length)
		maybe_crash(s, "right after offering the blocks (decode may be mid-transfer)",
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

/* Pulls every rank's blocks; 0 or -errno with why set. */
static int fetch(struct sa *s, struct sa_req *r, int64_t **blk, size_t nb, char *why, size_t wsz)
{
	for (int k = 0; k < s->o.tp; k++) {
		struct kv1_worker *w = s->w[r->dp][k];
		int ret;

		blk[k] = malloc(nb * sizeof(int64_t));
		if (!blk[k] || kv1_alloc(w, nb, blk[k])) {
			free(blk[k]);
			blk[k] = NULL;
			snprintf(why, wsz, "no free KV blocks on rank %d", k);
			return -ENOSPC;
		}
		if (s->gen == CFG_GEN_A)
			ret = kv1_recv_a(w, r->kvp.remote_host, (int)r->kvp.remote_port,
			                 r->engine_id, blk[k], nb, why, wsz);
		else
			ret = kv1_recv_b(w, r->kvp.bootstrap, r->kvp.remote_engine_id,
			                 r->kvp.transfer_id, r->engine_id, blk[k], nb, why, wsz);
		if (ret)
			return ret;
	}
	return 0;
}

/* Reads the KV actually in the blocks, seeds generation from it and checks it against the
 * fake model off the answer path (a mismatch is counted, the text follows the blocks). */
static int use_blocks(struct sa *s, struct sa_req *r, int64_t **blk)
{
	const struct mdl_geom *g = &s->o.geom;
	int hs = g->kv_heads / s->o.tp;
	size_t each = row_bytes(s) * r->ntok * (size_t)g->layers, full = each * (size_t)s->o.tp;
	uint8_t *k = malloc(each), *v = malloc(each), *fk = calloc(1, full), *fv = calloc(1, full);
	struct mdl_kv sh[SA_MAX_TP];
	uint64_t want = 0;
	int ret = -ENOMEM;

	memset(sh, 0, sizeof(sh));
	if (!k || !v || !fk || !fv)
		goto out;
	for (int i = 0; i < s->o.tp; i++) {
		if (!s->gpu)
			shard_blocks(s, s->w[r->dp][i], k, v, r->ntok, blk[i], false);
		else if (sa_gpu_read_blocks(s, s->w[r->dp][i], k, v, r->ntok, row_bytes(s), blk[i]))
			goto out;
		mdl_kv_place_shard(g, r->ntok, k, i * hs, hs, fk);
		mdl_kv_place_shard(g, r->ntok, v, i * hs, hs, fv);
	}
	r->seed = mdl_kv_checksum(fk, fv, full);
	if (compute_shards(s, r, sh, 1, &want, false))
		goto out;
	if (want != r->seed) {
		atomic_fetch_add(&s->n.checksum_failures, 1);
		pd_warn("request %s: the KV in the received blocks is not the prompt's (checksum "
		        "%016llx, expected %016llx): decoding from it anyway, as vLLM would",
		        r->id, (unsigned long long)r->seed, (unsigned long long)want);
	}
	ret = 0;
out:
	free_shards(sh, 1);
	free(k);
	free(v);
	free(fk);
	free(fv);
	return ret;
}

static int prefill_consumer(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	int64_t *blk[SA_MAX_TP] = {0};
	size_t nb = nblocks_for(s, r->ntok);
	char why[768] = "";
	int ret;

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
	ret = fetch(s, r, blk, nb, why, sizeof(why));
	if (!ret) {
		maybe_crash(s, "after the transfer, before using the KV", r->id);
		ret = use_blocks(s, r, blk);
		if (ret)
			snprintf(why, sizeof(why), "out of memory reading the blocks");
	}
	for (int k = 0; k < s->o.tp; k++)
		if (blk[k]) {
			kv1_free(s->w[r->dp][k], blk[k], nb);
			free(blk[k]);
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
