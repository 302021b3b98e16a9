/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_hyb: the stand-in's hybrid-model mode (--kv-groups) — KV-cache groups of full-attention,
 * sliding-window and Mamba/GDN layers, the window clipping vLLM applies to a request's blocks, the
 * per-group block layout that gen B's HMA wire carries (one list per group), and the N-1 rule of
 * a model with Mamba/GDN layers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "sa.h"

int sa_hyb_parse(const char *spec, struct sa_hyb *h, char *err, size_t errsz)
{
	const char *p = spec;
	bool full = false, other = false;

	memset(h, 0, sizeof(*h));
	while (p && *p) {
		size_t n = strcspn(p, ",");
		char one[64];
		long w = 0;
		char *end = NULL;

		if (h->ng == SA_MAX_GROUPS || n >= sizeof(one)) {
			snprintf(err, errsz,
			         "--kv-groups %s: at most %d groups, each \"full\", "
			         "\"sliding:W\" or \"mamba\"",
			         spec, SA_MAX_GROUPS);
			return -EINVAL;
		}
		memcpy(one, p, n);
		one[n] = 0;
		if (!strcmp(one, "full")) {
			full = true;
		} else if (!strcmp(one, "mamba")) {
			other = h->mamba = true;
			w = SA_HYB_MAMBA;
		} else if (!strncmp(one, "sliding:", 8) && (w = strtol(one + 8, &end, 10)) > 0 &&
		           !*end && w <= 1 << 24) {
			other = true;
		} else {
			snprintf(err, errsz,
			         "--kv-groups %s: group %d (\"%s\") is not \"full\", \"mamba\" "
			         "or \"sliding:W\" with W a window of 1..16777216 tokens",
			         spec, h->ng, one);
			return -EINVAL;
		}
		h->win[h->ng++] = (int)w;
		p += n + (p[n] == ',');
	}
	if (h->ng < 2 || !full || !other) {
		snprintf(err, errsz,
		         "--kv-groups %s: a hybrid model has at least two groups, at least one "
		         "\"full\" and one \"sliding:W\" or \"mamba\" (e.g. full,sliding:128 or "
		         "full,mamba)",
		         spec ? spec : "");
		return -EINVAL;
	}
	return 0;
}

int sa_hyb_group(const struct sa *s, int layer)
{
	return s->hyb.ng > 1 ? layer % s->hyb.ng : 0;
}

/* Blocks of group g a request of nb blocks keeps: a Mamba/GDN group's one (the pdkv model of
 * its recurrent state: the rows of the last block's positions, which depend on the whole prefix
 * as h(N-1) does; vLLM keeps the state in one block and NULL_BLOCK_ID placeholders elsewhere,
 * which pdkv does not put on the wire), a sliding window's cdiv(W, block_size) + 1
 * (MooncakeConnectorScheduler.blocks_per_sw, "add 1 ... for boundary overlap", and
 * get_sw_clipped_blocks' blocks[-n:], mooncake_connector.py @ 00f4240e), a full group all. */
static size_t kept(const struct sa *s, int g, size_t nb)
{
	size_t bs = (size_t)s->o.block_size, w, k;

	if (s->hyb.win[g] == SA_HYB_MAMBA) /* the state after the last position: one block */
		return nb ? 1 : 0;
	w = (size_t)s->hyb.win[g];
	if (!w)
		return nb;
	k = (w + bs - 1) / bs + 1;
	return k < nb ? k : nb;
}

void sa_hyb_layout(const struct sa *s, size_t ntok, bool clipped, struct sa_glay *gl)
{
	size_t bs = (size_t)s->o.block_size, nb = (ntok + bs - 1) / bs;

	memset(gl, 0, sizeof(*gl));
	gl->ng = s->hyb.ng > 1 && s->hyb.wire ? (size_t)s->hyb.ng : 1;
	for (size_t g = 0; g < gl->ng; g++) {
		size_t k = gl->ng > 1 && clipped ? kept(s, (int)g, nb) : nb;

		gl->off[g] = gl->total;
		gl->cnt[g] = k;
		gl->first[g] = nb - k;
		gl->total += k;
	}
}

int sa_hyb_t0(const struct sa *s, size_t ntok, size_t **t0)
{
	size_t bs = (size_t)s->o.block_size, nb = (ntok + bs - 1) / bs;
	int L = s->o.geom.layers;

	*t0 = NULL;
	if (s->hyb.ng < 2)
		return 0;
	*t0 = calloc((size_t)(L > 0 ? L : 1), sizeof(**t0));
	if (!*t0)
		return -ENOMEM;
	/* the window's rows: the same with HMA off, where every block travels (the model only
	 * reads a sliding layer's window whatever the connector sends) */
	for (int l = 0; l < L; l++)
		(*t0)[l] = (nb - kept(s, sa_hyb_group(s, l), nb)) * bs;
	return 0;
}

void sa_hyb_buf_groups(const struct sa *s, uint8_t *bg, int nbufs)
{
	for (int i = 0; i < nbufs; i++)
		bg[i] = (uint8_t)sa_hyb_group(s, s->kv_layout == SA_KV_SPLIT ? i / 2 : i);
}

size_t sa_hyb_remote_tokens(const struct sa *s, size_t ntok)
{
	/* MooncakeConnectorScheduler._get_remote_prefill_token_count (D) and
	 * _truncate_mamba_request_for_prefill (P), mooncake_connector.py @ 00f4240e: with Mamba
	 * layers (kv_cache_config.has_mamba_layers) a prompt of more than one token is
	 * prefilled and loaded for N-1 tokens; D recomputes the last one from h(N-1) */
	return s->hyb.mamba && (s->vi.feat & CFG_F_GDN_N1) && ntok > 1 ? ntok - 1 : ntok;
}

int sa_hyb_n1_done(struct sa *s, struct sa_req *r)
{
	size_t *t0 = NULL;
	int ret = 0;

	r->ntok = r->n1_full;
	r->n1_full = 0;
	/* vLLM: get_num_new_matched_tokens answered N-1 (external), the scheduler computes the
	 * one token left (local_compute 1); prompt_tokens_cached counts the N-1 loaded */
	atomic_fetch_add(&s->n.src_local, 1);
	atomic_fetch_add(&s->n.cached_tokens, 1);
	atomic_fetch_add(&s->n.mamba_n1, 1);
	r->cached_tokens = r->ntok - 1;
	if (r->kv_check_failed) /* decoding from the wrong state: the text follows the blocks */
		return 0;
	/* h(N) from h(N-1) and the last token: the KV the whole prompt has (what the plain
	 * stand-in computes), hashed; the last token's pace was already taken */
	if (!(ret = sa_hyb_t0(s, r->ntok, &t0))) {
		struct sa_kvmap win = {NULL, NULL, t0, 0};

		ret =
		    sa_kv_gen(&s->o.geom, r->tokens, r->ntok, 1, t0 ? &win : NULL, &r->seed, NULL);
	}
	free(t0);
	return ret;
}

int sa_hyb_start(struct sa *s)
{
	bool hma = (s->vi.feat & CFG_F_HMA) != 0;

	if (s->hyb.ng < 2)
		return 0;
	if (s->hyb.mamba && !(s->vi.feat & CFG_F_GDN_N1)) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-groups %s: a \"mamba\" (Mamba/GDN) group needs "
		        "a vLLM whose MooncakeConnector handles Mamba layers (#46807, from 0.26 in "
		        "pdkv's table); vLLM %s is older (--vllm-version)\n",
		        s->o.kv_groups ? s->o.kv_groups : "", s->vi.version);
		return -1;
	}
	if (s->hyb.mamba)
		pd_info("Mamba/GDN model (vLLM #46807): a remote prefill computes and sends N-1 "
		        "prompt tokens, the decode loads N-1 and recomputes the last one; the "
		        "Mamba group keeps one block per request");
	if (s->o.kv_cache_device && strcmp(s->o.kv_cache_device, "cpu")) {
		fprintf(stderr,
		        "pdkv-standin: error: --kv-groups with --kv-cache-device %s: the "
		        "hybrid-model mode keeps its KV blocks in host memory\n",
		        s->o.kv_cache_device);
		return -1;
	}
	/* vLLM #41847 turned the hybrid KV cache manager on for connectors that support it;
	 * before, a connector ran with it off: one group, every layer's blocks whole */
	s->hyb.wire = hma && s->gen >= CFG_GEN_B2;
	if (s->hyb.wire)
		pd_info("hybrid model: %d KV-cache groups (layer l in group l %% %d), one block "
		        "list per group; sliding-window groups send their last cdiv(W, %d) + 1 "
		        "blocks (vLLM #41847, get_sw_clipped_blocks)",
		        s->hyb.ng, s->hyb.ng, s->o.block_size);
	else
		pd_info("hybrid model: %d KV-cache groups, but vLLM %s (gen %s) runs the hybrid KV "
		        "cache manager off for the connector (%s): one block list, every layer's "
		        "blocks sent whole",
		        s->hyb.ng, s->vi.version, cfg_gen_name(s->gen),
		        hma ? "its struct shape has no per-group lists" : "before #41847");
	return 0;
}

size_t sa_hyb_clip_send(struct sa *s, struct kv1_worker *w, size_t ntok, const struct sa_glay *all,
                        const int64_t *ids, int64_t *out, size_t *gcnt)
{
	struct sa_glay cl;
	size_t n = 0;

	sa_hyb_layout(s, ntok, true, &cl);
	for (size_t g = 0; g < all->ng; g++) {
		size_t drop = all->cnt[g] - cl.cnt[g];

		/* request_finished: the blocks before the window are not sent (freed now) */
		if (drop)
			kv1_free(w, ids + all->off[g], drop);
		memcpy(out + n, ids + all->off[g] + drop, cl.cnt[g] * sizeof(*out));
		gcnt[g] = cl.cnt[g];
		n += cl.cnt[g];
	}
	return n;
}
