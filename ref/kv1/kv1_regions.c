/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_regions: gen B's Bl transfer regions (vLLM #44528) — naming pdkv's KV buffers as vLLM layers,
 * expanding and aligning a handshake's regions by (layer name, occurrence), and the TP pairing and
 * head-slice plan of vLLM #36869. Model: mooncake_connector.py and kv_connector/utils.py @
 * 00f4240e. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv1_internal.h"
#include "pd_util.h"

int kv1_layer_bufs(const struct kv1_opts *o)
{
	if (o->layer_bufs > 0)
		return o->layer_bufs;
	return o->nbufs % 2 ? 1 : 2;
}

void kv1_layer_name(int layer, char *out, size_t outsz)
{
	/* the attention module's name, the key of vLLM's kv_caches dict */
	snprintf(out, outsz, "model.layers.%d.self_attn.attn", layer);
}

int kv1_tp_ratio(int local_tp, int remote_tp)
{
	if (local_tp < 1 || remote_tp < 1)
		return 0;
	if (local_tp >= remote_tp)
		return local_tp % remote_tp ? 0 : local_tp / remote_tp;
	return remote_tp % local_tp ? 0 : -(remote_tp / local_tp);
}

int kv1_tp_targets(int rank, int tp, int remote_tp, int *ranks, int max)
{
	int r = kv1_tp_ratio(tp, remote_tp), n = 0;

	if (!r || max < 1)
		return 0;
	if (r > 0) {
		ranks[0] = rank / r;
		return 1;
	}
	for (int i = 0; i < -r && n < max; i++)
		ranks[n++] = rank * -r + i;
	return n;
}

void kv1_tp_plan(int p_rank, int p_tp, int d_rank, int d_tp, int64_t p_kv_len, int64_t d_kv_len,
                 bool replicated, struct kv1_tp_plan *out)
{
	/* _compute_sender_transfer_plan with the producer "local"; the KV-head-count branch
	 * (replication differing between the sides) is not modelled */
	int r = kv1_tp_ratio(p_tp, d_tp);

	*out = (struct kv1_tp_plan){true, 0, 0, p_kv_len};
	if (replicated) /* MLA: every rank holds all of it; one P rank per D rank sends */
		out->send = r <= 1 || p_rank % r == 0;
	else if (r > 1) /* P's heads are one slice of D's larger block */
		out->dst_off = (int64_t)(p_rank % r) * p_kv_len;
	else if (r < 0) { /* D's heads are one slice of P's larger block */
		out->src_off = (int64_t)(d_rank % -r) * d_kv_len;
		out->len = d_kv_len;
	}
}

static void set_msg(char *msg, size_t msz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_msg(char *msg, size_t msz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msz, fmt, ap);
	va_end(ap);
}

int kv1_regions_expand(const struct kv1_xfer_meta *m, struct kv1_region **out, size_t *n, char *msg,
                       size_t msz)
{
	struct kv1_region *r;

	*out = NULL;
	*n = 0;
	if (m->nbases != m->nblock_lens || m->nbases != m->nkv_block_lens ||
	    m->nbases != m->nlayer_names || m->nbases != m->nlayer_indices) {
		set_msg(msg, msz,
		        "Mooncake transfer regions require matching metadata lengths, got "
		        "base_addrs=%zu, block_lens=%zu, kv_block_lens=%zu, layer_names=%zu, "
		        "layer_indices=%zu.",
		        m->nbases, m->nblock_lens, m->nkv_block_lens, m->nlayer_names,
		        m->nlayer_indices);
		return -EINVAL;
	}
	/* [] means "derive from the names": vLLM looks each name up in its own groups
	 * (_get_transfer_regions); a pdkv decode always sends them, so [] reads as group 0 */
	if (m->ngroup_indices && m->ngroup_indices != m->nlayer_names) {
		set_msg(msg, msz,
		        "Mooncake transfer regions require matching group metadata lengths, got "
		        "group_indices=%zu, layer_names=%zu.",
		        m->ngroup_indices, m->nlayer_names);
		return -EINVAL;
	}
	r = calloc(m->nbases ? m->nbases : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < m->nbases; i++)
		r[i] = (struct kv1_region){m->layer_names[i],
		                           m->layer_indices[i],
		                           m->ngroup_indices ? m->group_indices[i] : 0,
		                           m->bases[i],
		                           m->block_lens[i],
		                           m->kv_block_lens[i]};
	*out = r;
	*n = m->nbases;
	return 0;
}

/* occurrence of r[i]'s name among r[0..i) */
static size_t occurrence(const struct kv1_region *r, size_t i)
{
	size_t k = 0;

	for (size_t j = 0; j < i; j++)
		k += !strcmp(r[j].name, r[i].name);
	return k;
}

/* index of the region with name and occurrence occ in r, or -1; hint is tried first */
static long find_key(const struct kv1_region *r, size_t n, const char *name, size_t occ,
                     size_t hint)
{
	size_t k = 0;

	if (hint < n && !strcmp(r[hint].name, name) && occurrence(r, hint) == occ)
		return (long)hint;
	for (size_t j = 0; j < n; j++)
		if (!strcmp(r[j].name, name) && k++ == occ)
			return (long)j;
	return -1;
}

/* "Mooncake registered <what> index mismatch for <name>: producer=P, consumer=C."; -EINVAL */
static int mismatch(char *msg, size_t msz, const char *what, const char *name, int64_t p, int64_t c)
{
	set_msg(msg, msz,
	        "Mooncake registered %s index mismatch for %s: producer=%lld, consumer=%lld.", what,
	        name, (long long)p, (long long)c);
	return -EINVAL;
}

int kv1_regions_align(const struct kv1_region *loc, size_t nl, const struct kv1_region *rem,
                      size_t nr, bool allow_partial, long *map, char *msg, size_t msz)
{
	for (size_t i = 0; i < nl; i++) {
		size_t occ = occurrence(loc, i);
		long j = find_key(rem, nr, loc[i].name, occ, i);

		map[i] = j;
		if (j < 0) {
			if (allow_partial && find_key(rem, nr, loc[i].name, 0, i) < 0)
				continue;
			set_msg(msg, msz,
			        "Mooncake producer registered layer has no matching consumer "
			        "occurrence: %s occurrence %zu.",
			        loc[i].name, occ);
			return -EINVAL;
		}
		if (loc[i].index != rem[j].index)
			return mismatch(msg, msz, "layer", loc[i].name, loc[i].index, rem[j].index);
		if (loc[i].group != rem[j].group)
			return mismatch(msg, msz, "group", loc[i].name, loc[i].group, rem[j].group);
	}
	return 0;
}

int kv1_regions_check_lens(const struct kv1_region *loc, size_t nl, const struct kv1_region *rem,
                           const long *map, int local_tp, int remote_tp, char *msg, size_t msz)
{
	/* _validate_asymmetric_region_lengths over the aligned pairs (dense, not replicated) */
	int r = kv1_tp_ratio(local_tp, remote_tp);
	size_t idx = 0;

	for (size_t i = 0; i < nl; i++) {
		const struct kv1_region *a = &loc[i], *b;

		if (map[i] < 0)
			continue;
		b = &rem[map[i]];
		if (r == 1 && a->kv_block_len != b->kv_block_len) {
			set_msg(msg, msz,
			        "Mooncake KV region length mismatch for homogeneous TP at region "
			        "%zu: local=%lld, remote=%lld.",
			        idx, (long long)a->kv_block_len, (long long)b->kv_block_len);
			return -EINVAL;
		}
		if (r > 1 && b->kv_block_len != a->kv_block_len * r) {
			set_msg(msg, msz,
			        "Mooncake destination KV region length does not match the producer "
			        "TP ratio at region %zu: local=%lld, remote=%lld, tp_ratio=%d.",
			        idx, (long long)a->kv_block_len, (long long)b->kv_block_len, r);
			return -EINVAL;
		}
		if (r < 0 && a->kv_block_len != b->kv_block_len * -r) {
			set_msg(msg, msz,
			        "Mooncake source KV region length does not match the consumer TP "
			        "ratio at region %zu: local=%lld, remote=%lld, tp_ratio=%d.",
			        idx, (long long)a->kv_block_len, (long long)b->kv_block_len, r);
			return -EINVAL;
		}
		idx++;
	}
	return 0;
}

/* ------------------------------------------------------------------ the worker's side */

/* Without TP topology: D rank d reads from P rank d % P.tp. With it (vLLM #36869): P accepts
 * the D ranks of TransferTopology.handshake_target_ranks(D.tp), and tp_ratio's assertion text
 * when one size does not divide the other. */
/* Handshakes no decode sends (issue 34, N9), refused at once instead of parked until the abort
 * timeout. remote_tp_rank outside 0..remote_tp_size-1: with TP topology no target rank matches
 * and vLLM's pairing text follows in kv1_genb_paired; without it (B0) vLLM never reads
 * remote_tp_rank (get_target_remote_ranks(remote_tp_size)) and would wait, so pdkv refuses with
 * its own text. An empty kv_caches_base_addr: B1..Bn answer with the text of vLLM's
 * _expand_transfer_regions assertion (mooncake_connector.py @ b745e8b5d, #36869) or of
 * _validate_asymmetric_region_lengths (@ 00f4240e) when block_lens is empty too; Bl's
 * kv1_regions_expand has its own; B0 zips the empty list and would write nothing, so pdkv
 * refuses with its own text. */
static bool genb_sane(const struct kv1_worker *w, const struct kv1_xfer_meta *m, char *msg,
                      size_t msz)
{
	if (!w->o.tp_topology &&
	    (m->remote_tp_rank < 0 || m->remote_tp_rank >= m->remote_tp_size)) {
		snprintf(msg, msz,
		         "MooncakeXferMetadata: remote_tp_rank %lld is outside remote_tp_size %lld "
		         "(refused by pdkv; vLLM before #36869 does not check it and waits)",
		         (long long)m->remote_tp_rank, (long long)m->remote_tp_size);
		return false;
	}
	if (m->nbases || w->o.gen >= CFG_GEN_BL)
		return true;
	if (w->o.gen == CFG_GEN_B0)
		snprintf(
		    msg, msz,
		    "MooncakeXferMetadata: kv_caches_base_addr is empty (refused by pdkv; vLLM's "
		    "gen B0 would write nothing)");
	else if (m->nblock_lens)
		snprintf(msg, msz,
		         "Mooncake transfer regions require matching numbers of base addresses and "
		         "block lengths, got 0 and %zu.",
		         m->nblock_lens);
	else
		snprintf(msg, msz,
		         "Mooncake asymmetric TP requires matching KV region counts between "
		         "producer and consumer.");
	return false;
}

bool kv1_genb_paired(const struct kv1_worker *w, const struct kv1_xfer_meta *m, char *msg,
                     size_t msz)
{
	int t[KV1_MAX_TP_TARGETS], n, k;
	int64_t d = m->remote_tp_rank;

	if (!genb_sane(w, m, msg, msz))
		return false;
	if (!w->o.tp_topology) {
		int64_t t0 = d % w->o.tp_size;

		if (t0 == w->o.tp_rank)
			return true;
		snprintf(msg, msz, "This P tp_rank %d not in remote D target ranks [%lld]",
		         w->o.tp_rank, (long long)t0);
		return false;
	}
	if (!kv1_tp_ratio(w->o.tp_size, (int)m->remote_tp_size)) {
		if (w->o.tp_size >= m->remote_tp_size)
			snprintf(msg, msz,
			         "Local tensor parallel size %d is not divisible by remote tensor "
			         "parallel size %lld.",
			         w->o.tp_size, (long long)m->remote_tp_size);
		else
			snprintf(
			    msg, msz,
			    "Remote tensor parallel size %lld is not divisible by local tensor "
			    "parallel size %d.",
			    (long long)m->remote_tp_size, w->o.tp_size);
		return false;
	}
	n = kv1_tp_targets(w->o.tp_rank, w->o.tp_size, (int)m->remote_tp_size, t,
	                   KV1_MAX_TP_TARGETS);
	for (int i = 0; i < n; i++)
		if (t[i] == d)
			return true;
	/* Python's str() of the list: "[2, 3]" */
	k = snprintf(msg, msz,
	             "This D tp_rank %lld is not paired with P tp_rank %d; expected one of [",
	             (long long)d, w->o.tp_rank);
	for (int i = 0; i < n && k > 0 && (size_t)k < msz; i++)
		k += snprintf(msg + k, msz - (size_t)k, "%s%d", i ? ", " : "", t[i]);
	if (k > 0 && (size_t)k < msz)
		snprintf(msg + k, msz - (size_t)k, "].");
	return false;
}

/* Bl (vLLM #44528): this worker's regions as vLLM registers them — buffer i is layer
 * i / layer_bufs; names point into *names (malloc'd, freed by the caller). */
static struct kv1_region *local_regions(const struct kv1_worker *w, char **names)
{
	size_t n = (size_t)w->o.nbufs;
	int lb = kv1_layer_bufs(&w->o);
	struct kv1_region *r = calloc(n ? n : 1, sizeof(*r));

	*names = calloc(n ? n : 1, KV1_LAYER_NAME_MAX);
	if (!r || !*names) {
		free(r);
		free(*names);
		*names = NULL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		char *nm = *names + i * KV1_LAYER_NAME_MAX;

		kv1_layer_name(w->o.first_layer + (int)i / lb, nm, KV1_LAYER_NAME_MAX);
		r[i] = (struct kv1_region){nm,
		                           w->o.first_layer + (int64_t)i / lb,
		                           w->grp[i], /* one group (0) without HMA */
		                           (uint64_t)(uintptr_t)w->bufs[i],
		                           (int64_t)w->o.block_len,
		                           (int64_t)w->o.block_len};
	}
	return r;
}

/* The aligned regions' copies (the plan of each pair); -EINVAL with vLLM's assertion text when
 * a slice would leave a block. */
static int plan_regions(const struct kv1_worker *w, const struct kv1_xfer_meta *m,
                        const struct kv1_region *loc, const struct kv1_region *rem, const long *map,
                        struct kv1_xregion **xr, size_t *nxr, char *msg, size_t msz)
{
	*xr = calloc((size_t)w->o.nbufs + 1, sizeof(**xr));
	if (!*xr)
		return -ENOMEM;
	for (int i = 0; i < w->o.nbufs; i++) {
		const struct kv1_region *a = &loc[i], *b;
		struct kv1_tp_plan pl = {true, 0, 0, a->kv_block_len};

		if (map[i] < 0)
			continue;
		b = &rem[map[i]];
		if (w->o.tp_topology)
			kv1_tp_plan(w->o.tp_rank, w->o.tp_size, (int)m->remote_tp_rank,
			            (int)m->remote_tp_size, a->kv_block_len, b->kv_block_len,
			            w->o.mla, &pl);
		if (!pl.send)
			continue;
		if (pl.src_off + pl.len > a->kv_block_len) {
			snprintf(msg, msz,
			         "Computed source transfer region exceeds local KV block size.");
			return -EINVAL;
		}
		if (pl.dst_off + pl.len > b->kv_block_len) {
			snprintf(msg, msz,
			         "Destination transfer region exceeds remote KV block size.");
			return -EINVAL;
		}
		(*xr)[(*nxr)++] = (struct kv1_xregion){
		    i, (int)a->group, b->base, b->block_len, pl.src_off, pl.dst_off, pl.len};
	}
	return 0;
}

int kv1_bl_plan(const struct kv1_worker *w, const struct kv1_xfer_meta *m, struct kv1_xregion **xr,
                size_t *nxr, char *msg, size_t msz)
{
	struct kv1_region *loc, *rem = NULL;
	char *names = NULL;
	size_t nr = 0;
	long *map = calloc((size_t)w->o.nbufs + 1, sizeof(long));
	int ret = -ENOMEM;

	loc = local_regions(w, &names);
	if (loc && map) {
		/* allow_partial_layers: D's PP size is above 1 and differs from ours */
		bool partial = m->remote_pp_size > 1 && m->remote_pp_size != kv1_pp_size(&w->o);
		int dtp = w->o.tp_topology ? (int)m->remote_tp_size : w->o.tp_size;

		ret = kv1_regions_expand(m, &rem, &nr, msg, msz);
		if (!ret)
			ret = kv1_regions_align(loc, (size_t)w->o.nbufs, rem, nr, partial, map, msg,
			                        msz);
		if (!ret && !w->o.mla)
			ret = kv1_regions_check_lens(loc, (size_t)w->o.nbufs, rem, map,
			                             w->o.tp_size, dtp, msg, msz);
		if (!ret)
			ret = plan_regions(w, m, loc, rem, map, xr, nxr, msg, msz);
	}
	if (ret == -ENOMEM)
		snprintf(msg, msz, "out of memory expanding the transfer regions");
	free(loc);
	free(rem);
	free(names);
	free(map);
	return ret;
}

/* Bl: the registered_layer_* lists of our buffers (vLLM's register_kv_caches): names[i] is
 * buffer i's layer, repeated for each buffer of that layer. */
int kv1_bl_layers(const struct kv1_worker *w, struct kv1_xfer_meta *m)
{
	size_t n = (size_t)w->o.nbufs;
	int lb = kv1_layer_bufs(&w->o);
	char *pool = calloc(n ? n : 1, KV1_LAYER_NAME_MAX);

	m->layer_names = calloc(n ? n : 1, sizeof(char *));
	m->layer_indices = calloc(n ? n : 1, sizeof(int64_t));
	m->group_indices = calloc(n ? n : 1, sizeof(int64_t));
	if (!pool || !m->layer_names || !m->layer_indices || !m->group_indices) {
		free(pool);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		m->layer_names[i] = pool + i * KV1_LAYER_NAME_MAX;
		kv1_layer_name(w->o.first_layer + (int)i / lb, m->layer_names[i],
		               KV1_LAYER_NAME_MAX);
		m->layer_indices[i] = w->o.first_layer + (int64_t)i / lb;
		m->group_indices[i] = w->grp[i]; /* transfer_group_index_by_layer */
	}
	m->nlayer_names = m->nlayer_indices = m->ngroup_indices = n;
	return 0;
}

void kv1_bl_layers_free(struct kv1_xfer_meta *m)
{
	if (m->layer_names)
		free(m->layer_names[0]); /* the pool */
	free(m->layer_names);
	free(m->layer_indices);
	free(m->group_indices);
}
