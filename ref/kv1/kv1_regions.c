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
	/* [] means "derive from the names": vLLM looks each name up in its own groups; pdkv has
	 * one KV group, so every region is group 0 */
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
		if (loc[i].index != rem[j].index) {
			set_msg(msg, msz,
			        "Mooncake registered layer index mismatch for %s: producer=%lld, "
			        "consumer=%lld.",
			        loc[i].name, (long long)loc[i].index, (long long)rem[j].index);
			return -EINVAL;
		}
		if (loc[i].group != rem[j].group) {
			set_msg(msg, msz,
			        "Mooncake registered group index mismatch for %s: producer=%lld, "
			        "consumer=%lld.",
			        loc[i].name, (long long)loc[i].group, (long long)rem[j].group);
			return -EINVAL;
		}
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
