/* SPDX-License-Identifier: Apache-2.0 */
/* sa_engine: the prefill step of one request — a producer computes the KV and inserts it into the
 * connector, a consumer asks the connector for it (verify checksum, else miss policy), a plain
 * instance computes it. Faults (drop, corrupt, delay, crash) are applied here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"

enum fetch { F_HIT = 0, F_MISS, F_BAD, F_CSUM, F_XFER };

static int kv_dtype(int bytes)
{
	return bytes == 1 ? KVC_U8 : bytes == 2 ? KVC_BF16 : KVC_F32;
}

static void tset(struct kvc_tensor *t, int dtype, int ndim, const int64_t *shape, void *data,
                 size_t nbytes)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	t->data = data;
	t->nbytes = nbytes;
}

/* --fault crash[=N]: _exit(1) at the Nth request that reaches a transfer step (any connector). */
void sa_maybe_crash(struct sa *s, const char *where, const char *id)
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

/* Where rank k's heads of (layer, token) sit in V0 shard tensors [L, T, hs, D] (sa_kvmap). */
struct shmap {
	struct mdl_kv *sh;
	uint8_t **k, **v; /* or raw keys / values arrays per rank */
	size_t n, seg;
};

static uint8_t *sh_seg(void *ud, bool value, int l, size_t t, int k)
{
	struct shmap *m = ud;

	return (value ? m->v[k] : m->k[k]) + ((size_t)l * m->n + t) * m->seg;
}

/* A producer's shard tensors (keys, values, hidden) in the connector's registered memory, so
 * the pipe sends them as they were generated (kvc_tensor_alloc_buf); sh[i] points into them. */
static int alloc_shard(struct sa *s, struct sa_req *r, int i, int hs, struct kvc_tensor *kt,
                       struct mdl_kv *o)
{
	const struct mdl_geom *g = &s->o.geom;
	int64_t T = (int64_t)r->ntok, kshape[4] = {g->layers, T, hs, g->head_dim},
	        hshape[2] = {T, g->hidden_size};

	if (kvc_tensor_alloc_buf(s->kvc[i], &kt[0], kv_dtype(g->dtype_bytes), 4, kshape) ||
	    kvc_tensor_alloc_buf(s->kvc[i], &kt[1], kv_dtype(g->dtype_bytes), 4, kshape) ||
	    kvc_tensor_alloc_buf(s->kvc[i], &kt[2], KVC_BF16, 2, hshape) ||
	    kt[0].nbytes != o->bytes_each || kt[2].nbytes != o->hidden_bytes)
		return -ENOMEM;
	o->keys = kt[0].data;
	o->values = kt[1].data;
	o->hidden = kt[2].data;
	return 0;
}

static void free_shards(struct mdl_kv *sh, struct kvc_tensor (*kt)[3], int nsh)
{
	for (int i = 0; i < nsh; i++) {
		for (int j = 0; j < 3; j++)
			kvc_tensor_free(&kt[i][j]);
		memset(&sh[i], 0, sizeof(sh[i])); /* its pointers were into kt */
	}
}

/* Computes the request's KV and the generation seed over the whole KV. A producer gets one
 * shard per connector rank in sh (keys, values and hidden with its footer, in kt), generated
 * straight into the tensors it inserts; otherwise (nsh 0) the KV is only hashed. */
static int compute(struct sa *s, struct sa_req *r, struct mdl_kv *sh, struct kvc_tensor (*kt)[3],
                   int nsh, uint64_t *seed)
{
	const struct mdl_geom *g = &s->o.geom;
	int hs = g->kv_heads / (nsh ? nsh : 1), ret = -ENOMEM;
	uint64_t t0 = pd_now_ns(), ts = t0, sums[SA_MAX_TP], *pre = NULL;
	size_t rb = (size_t)g->head_dim * (size_t)g->dtype_bytes, hrow = (size_t)g->hidden_size * 2;
	uint8_t *kp[SA_MAX_TP], *vp[SA_MAX_TP];
	struct shmap m = {sh, kp, vp, r->ntok, rb * (size_t)hs};
	struct sa_kvmap map = {sh_seg, &m, NULL, 0};

	for (int i = 0; i < nsh; i++) {
		struct mdl_kv *o = &sh[i];

		o->ntokens = r->ntok;
		o->head0 = i * hs;
		o->nheads = hs;
		o->bytes_each = (size_t)g->layers * r->ntok * (size_t)hs * rb;
		o->hidden_bytes = r->ntok * hrow;
		if (alloc_shard(s, r, i, hs, kt[i], o))
			goto out;
		kp[i] = o->keys;
		vp[i] = o->values;
	}
	if (nsh && !(pre = malloc(r->ntok * sizeof(*pre))))
		goto out;
	sa_stage(r, "alloc", &ts);
	ret = sa_kv_gen(g, r->tokens, r->ntok, nsh ? nsh : 1, nsh ? &map : NULL, seed, sums);
	if (ret)
		goto out;
	sa_stage(r, "gen+seed", &ts);
	if (nsh)
		mdl_kv_prefix(r->tokens, r->ntok, pre);
	for (int i = 0; i < nsh; i++) {
		for (size_t t = 0; t < r->ntok; t++)
			mdl_hidden_row(g, pre[t], sh[i].hidden + t * hrow);
		mdl_footer_write(sh[i].hidden, sums[i], r->ntok, (uint32_t)i, (uint32_t)nsh);
	}
	sa_stage(r, "hidden", &ts);
	mdl_pace(t0, s->o.ns_per_token, r->ntok);
	sa_stage(r, "pace", &ts);
	r->t_kv_ready = ts;
	atomic_fetch_add(&s->n.computed, r->ntok);
out:
	free(pre);
	if (ret)
		free_shards(sh, kt, nsh);
	return ret;
}

static int produce(struct sa *s, struct sa_req *r, struct mdl_kv *sh, struct kvc_tensor (*kt)[3])
{
	const struct mdl_geom *g = &s->o.geom;
	int64_t T = (int64_t)r->ntok;
	uint8_t *roi = malloc(r->ntok);
	int ret = 0;
	uint64_t ts = pd_now_ns();

	if (!roi)
		return -ENOMEM;
	memset(roi, 1, r->ntok);
	if (s->o.fault.delay_ms) {
		pd_info("fault delay: request %s sleeps %d ms before insert", r->id,
		        s->o.fault.delay_ms);
		pd_sleep_ms(s->o.fault.delay_ms);
	}
	if (s->o.fault.drop) {
		pd_info("fault drop: request %s: KV not inserted", r->id);
		r->kv_note = "computed+dropped(fault)";
		goto out;
	}
	if (s->o.fault.corrupt) {
		size_t pos = sh[0].bytes_each / 2;

		sh[0].keys[pos] ^= 0x40;
		pd_info("fault corrupt: request %s: flipped bit 6 of key byte %zu after checksum",
		        r->id, pos);
	}
	for (int k = 0; k < s->nkvc; k++) {
		struct kvc_item it;
		int64_t shp[4] = {T};

		tset(&it.tokens, KVC_I64, 1, shp, r->tokens, r->ntok * sizeof(int64_t));
		tset(&it.roi, KVC_BOOL, 1, shp, roi, r->ntok);
		it.keys = kt[k][0];
		it.values = kt[k][1];
		it.hidden = kt[k][2];
		ret = kvc_insert_move_kv(s->kvc[k], &it);
		if (!ret) { /* the buffer owns them now */
			memset(kt[k], 0, sizeof(kt[k]));
			memset(&sh[k], 0, sizeof(sh[k]));
		}
		if (ret) {
			atomic_fetch_add(&s->n.insert_failures, 1);
			atomic_fetch_add(&s->n.transfer_failures, 1);
			pd_err("request %s: kvc_insert on rank %d failed: %s", r->id, k,
			       kvc_strerror(ret));
			goto out;
		}
	}
	sa_stage(r, "insert", &ts);
	sa_metrics_handoff(s, (double)(ts - (r->t_kv_ready ? r->t_kv_ready : ts)) / 1e9,
	                   mdl_kv_bytes_per_token(g, g->kv_heads) * r->ntok);
	atomic_fetch_add(&s->n.inserted, 1);
	r->kv_note = "computed+inserted";
	sa_maybe_crash(s, "right after kvc_insert (peer may be mid-transfer)", r->id);
out:
	free(roi);
	return ret;
}

static bool item_ok(struct sa *s, const struct sa_req *r, const struct kvc_item *it, int rank,
                    char *why, size_t whysz)
{
	const struct mdl_geom *g = &s->o.geom;
	int64_t T = (int64_t)r->ntok, hs = g->kv_heads / s->nkvc;
	size_t kvb =
	    (size_t)g->layers * r->ntok * (size_t)hs * (size_t)g->head_dim * (size_t)g->dtype_bytes;
	uint64_t sum, nt;
	uint32_t sh, nsh;

	if (it->roi.ndim != 1 || it->roi.shape[0] != T) {
		snprintf(why, whysz, "roi length %lld != %lld request tokens",
		         it->roi.ndim ? (long long)it->roi.shape[0] : -1LL, (long long)T);
		return false;
	}
	if (it->tokens.dtype != KVC_I64 || it->tokens.ndim != 1 || it->tokens.shape[0] != T ||
	    it->tokens.nbytes != r->ntok * 8 || memcmp(it->tokens.data, r->tokens, r->ntok * 8)) {
		snprintf(why, whysz, "received tokens differ from the request's");
		return false;
	}
	for (int i = 0; i < 2; i++) {
		const struct kvc_tensor *t = i ? &it->values : &it->keys;

		if (t->ndim != 4 || t->shape[0] != g->layers || t->shape[1] != T ||
		    t->shape[2] != hs || t->shape[3] != g->head_dim || t->nbytes != kvb ||
		    t->dtype != kv_dtype(g->dtype_bytes)) {
			snprintf(why, whysz,
			         "%s shape [%lld,%lld,%lld,%lld] (%zu bytes) != expected "
			         "[%d,%lld,%lld,%d] (%zu bytes)",
			         i ? "values" : "keys", (long long)t->shape[0],
			         (long long)t->shape[1], (long long)t->shape[2],
			         (long long)t->shape[3], t->nbytes, g->layers, (long long)T,
			         (long long)hs, g->head_dim, kvb);
			return false;
		}
	}
	if (it->hidden.ndim != 2 || it->hidden.shape[0] != T ||
	    it->hidden.nbytes != r->ntok * (size_t)g->hidden_size * 2 ||
	    mdl_footer_read(it->hidden.data, it->hidden.nbytes, &sum, &nt, &sh, &nsh) ||
	    nt != r->ntok || sh != (uint32_t)rank || nsh != (uint32_t)s->nkvc) {
		snprintf(why, whysz, "hidden states missing or without a pdkv footer for rank %d",
		         rank);
		return false;
	}
	return true;
}

/* Asks every rank's connector for the request's KV. On F_HIT *seed is set. */
static enum fetch fetch(struct sa *s, struct sa_req *r, uint64_t *seed, char *why, size_t whysz)
{
	const struct mdl_geom *g = &s->o.geom;
	struct kvc_item it[SA_MAX_TP];
	struct sa_v0hash vh[SA_MAX_TP];
	uint64_t deadline = pd_now_ns() + (uint64_t)s->o.kv_wait_timeout_ms * 1000000ULL;
	int hs = g->kv_heads / s->nkvc, got = 0;
	enum fetch res = F_HIT;
	uint64_t tst = pd_now_ns(), sum0 = 0, t_pull = tst;

	memset(it, 0, sizeof(it));
	for (int k = 0; k < s->nkvc; k++)
		sa_v0hash_init(&vh[k], g->layers, mdl_kv_row_bytes(g));
	for (int k = 0; k < s->nkvc && res == F_HIT; k++) {
		for (;;) {
			uint64_t ts = pd_now_ns();
			/* keys and values are hashed chunk by chunk as their READs land */
			int ret = kvc_drop_select_pieces(s->kvc[k], r->tokens, r->ntok, &it[k],
			                                 sa_v0hash_arrive, sa_v0hash_piece, &vh[k]);

			pd_dbg("request %s: kvc_drop_select rank %d -> %d in %.1f ms", r->id, k,
			       ret, (double)(pd_now_ns() - ts) / 1e6);

			if (ret == KVC_OK) {
				got = k + 1;
				break;
			}
			/* A timeout is "no KV arrived" (e.g. a producer that never inserted has no
			 * handler thread yet, docs/vllm-v0.md), not a failed transfer. */
			bool miss = ret == KVC_MISS || ret == KVC_ERR_TIMEOUT;

			if (!miss) {
				atomic_fetch_add(&s->n.transfer_failures, 1);
				pd_warn("request %s: kvc_drop_select on rank %d: %s", r->id, k,
				        kvc_strerror(ret));
			}
			if (s->o.miss_policy == SA_MISS_WAIT && pd_now_ns() < deadline &&
			    !atomic_load(&s->stopping)) {
				pd_sleep_ms(20);
				continue;
			}
			res = miss ? F_MISS : F_XFER;
			if (ret == KVC_ERR_TIMEOUT)
				snprintf(why, whysz,
				         "no answer from the producer within %d ms on rank %d",
				         s->o.miss_policy == SA_MISS_WAIT
				             ? s->o.kv_wait_timeout_ms
				             : s->o.kv_select_timeout_ms,
				         k);
			else
				snprintf(why, whysz, "%s on rank %d",
				         ret == KVC_MISS ? "producer had no KV for these tokens"
				                         : kvc_strerror(ret),
				         k);
			break;
		}
	}
	sa_stage(r, "drop_select", &tst);
	if (res == F_HIT)
		sa_maybe_crash(s, "after kvc_drop_select, before using the KV", r->id);
	for (int k = 0; k < got && res == F_HIT; k++) {
		uint64_t sum, nt;
		uint32_t sh, nsh;

		if (!item_ok(s, r, &it[k], k, why, whysz)) {
			res = F_BAD;
			break;
		}
		mdl_footer_read(it[k].hidden.data, it[k].hidden.nbytes, &sum, &nt, &sh, &nsh);
		uint64_t got_sum;

		if (!sa_v0hash_get(&vh[k], it[k].keys.data, it[k].values.data, it[k].keys.nbytes,
		                   &got_sum))
			got_sum =
			    mdl_kv_checksum(it[k].keys.data, it[k].values.data, it[k].keys.nbytes,
			                    g->layers, mdl_kv_row_bytes(g));

		if (k == 0)
			sum0 = got_sum;
		if (got_sum != sum) {
			char where[600];

			/* which bytes: a slice of zeros, a stale range, one row (rare: recompute)
			 */
			sa_kv_diff(g, r->tokens, r->ntok, k * hs, hs, k, s->nkvc, it[k].keys.data,
			           it[k].values.data, where, sizeof(where));
			pd_warn(
			    "request %s: KV checksum mismatch on rank %d, %zu bytes each of keys "
			    "and values: %s",
			    r->id, k, it[k].keys.nbytes, where);
			atomic_fetch_add(&s->n.checksum_failures, 1);
			r->kv_check_failed = true; /* X-PDKV-KV-Check: failed (issue 34, N4) */
			if (s->o.kv_integrity_policy == SA_KVI_OFF) {
				pd_warn(
				    "request %s: --kv-integrity-policy off: decoding from the KV "
				    "received anyway, as vLLM would",
				    r->id);
				continue;
			}
			snprintf(why, whysz, "KV checksum mismatch on rank %d (footer %016llx)", k,
			         (unsigned long long)sum);
			res = F_CSUM;
		}
	}
	sa_stage(r, "verify", &tst);
	if (res == F_HIT) {
		if (s->nkvc == 1) {
			*seed = sum0; /* the checksum just verified is the whole KV's */
		} else {
			uint8_t *kp[SA_MAX_TP], *vp[SA_MAX_TP];
			struct shmap m = {NULL, kp, vp, r->ntok,
			                  (size_t)hs * (size_t)g->head_dim *
			                      (size_t)g->dtype_bytes};
			struct sa_kvmap map = {sh_seg, &m, NULL, 0};

			for (int k = 0; k < s->nkvc; k++) {
				kp[k] = it[k].keys.data;
				vp[k] = it[k].values.data;
			}
			if (sa_kv_scan(g, r->tokens, r->ntok, s->nkvc, &map, seed, NULL)) {
				snprintf(why, whysz, "out of memory reading the KV");
				res = F_BAD;
			}
		}
	}
	sa_stage(r, "seed", &tst);
	if (res == F_HIT) {
		r->t_kv_verified = tst;
		sa_metrics_handoff(s, (double)(tst - t_pull) / 1e9,
		                   mdl_kv_bytes_per_token(g, g->kv_heads) * r->ntok);
	}
	for (int k = 0; k < got; k++)
		kvc_item_free(&it[k]);
	for (int k = 0; k < s->nkvc; k++)
		sa_v0hash_destroy(&vh[k]);
	sa_stage(r, "free", &tst);
	return res;
}

void sa_stage(struct sa_req *r, const char *name, uint64_t *t)
{
	uint64_t now = pd_now_ns();
	size_t k = strlen(r->stages);

	if (k < sizeof(r->stages) - 1)
		snprintf(r->stages + k, sizeof(r->stages) - k, " %s=%.1f", name,
		         (double)(now - *t) / 1e6);
	*t = now;
}

/* Ready: no KV connector, or the connector says so (/health, main's one "ready" line). */
bool sa_ready(struct sa *s)
{
	if (!s->kv)
		return !atomic_load(&s->stopping);
	return s->conn->ready(s);
}

int sa_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	uint64_t t0 = pd_now_ns();
	int ret = s->conn->prefill(s, r, msg, msg_alloc);

	r->kv_ms = (double)(pd_now_ns() - t0) / 1e6;
	if (r->t_kv_ready || r->t_kv_verified)
		pd_dbg("request %s: handoff kv_ready=%llu kv_verified=%llu tokens=%zu ms:%s", r->id,
		       (unsigned long long)r->t_kv_ready, (unsigned long long)r->t_kv_verified,
		       r->ntok, r->stages);
	return ret;
}

int sa_v0_prefill(struct sa *s, struct sa_req *r, const char **msg, char **msg_alloc)
{
	struct mdl_kv sh[SA_MAX_TP];
	struct kvc_tensor kt[SA_MAX_TP][3];
	int nsh = s->kv && s->producer ? s->nkvc : 0, ret;
	char why[256] = "";

	memset(sh, 0, sizeof(sh));
	memset(kt, 0, sizeof(kt));
	*msg = NULL;
	*msg_alloc = NULL;
	if (s->kv && s->consumer) {
		enum fetch f;

		if (s->o.fault.delay_ms) {
			pd_info("fault delay: request %s sleeps %d ms before drop_select", r->id,
			        s->o.fault.delay_ms);
			pd_sleep_ms(s->o.fault.delay_ms);
		}
		f = fetch(s, r, &r->seed, why, sizeof(why));
		if (f == F_HIT) {
			r->reused = r->ntok;
			atomic_fetch_add(&s->n.reused, r->ntok);
			r->kv_note = "hit";
			return 0;
		}
		if (f == F_CSUM && s->o.kv_integrity_policy == SA_KVI_FAIL) {
			*msg_alloc = pd_asprintf("KV for request %s failed the decode's integrity "
			                         "check (%s); --kv-integrity-policy fail",
			                         r->id, why);
			pd_warn("%s", *msg_alloc ? *msg_alloc : why);
			return 500;
		}
		if (f != F_CSUM)
			atomic_fetch_add(&s->n.misses, 1);
		if ((s->o.miss_policy == SA_MISS_FAIL ||
		     (s->o.miss_policy == SA_MISS_WAIT && f != F_CSUM && f != F_BAD)) &&
		    !(f == F_CSUM && s->o.kv_integrity_policy == SA_KVI_RECOMPUTE)) {
			*msg_alloc = pd_asprintf(
			    "KV cache for request %s not received (%s); --kv-miss-policy %s", r->id,
			    why, s->o.miss_policy == SA_MISS_FAIL ? "fail" : "wait");
			pd_warn("%s", *msg_alloc ? *msg_alloc : why);
			return (f == F_MISS || f == F_BAD) ? 503 : 500;
		}
		pd_warn("request %s: KV not received (%s); recomputing %zu prompt tokens", r->id,
		        why, r->ntok);
		ret = compute(s, r, sh, kt, 0, &r->seed);
		if (ret)
			goto oom;
		r->recomputed = r->ntok;
		atomic_fetch_add(&s->n.recomputed, r->ntok);
		r->kv_note = f == F_CSUM ? "recomputed(checksum)" : "recomputed(miss)";
		return 0;
	}
	ret = compute(s, r, sh, kt, nsh, &r->seed);
	if (ret)
		goto oom;
	r->kv_note = "computed";
	if (s->kv && s->producer)
		ret = produce(s, r, sh, kt);
	else
		sa_maybe_crash(s, "after computing the KV", r->id);
	free_shards(sh, kt, nsh);
	if (ret) {
		*msg_alloc =
		    pd_asprintf("KV insert for request %s failed: %s", r->id, kvc_strerror(ret));
		return 500;
	}
	return 0;
oom:
	*msg = "out of memory computing the KV cache";
	return 500;
}
