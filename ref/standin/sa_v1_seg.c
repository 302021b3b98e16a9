/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_seg: where a (layer, token)'s K or V row of tp rank k sits in a V1 worker's blocks, per
 * the KV layout (split, MLA, joined) and KV-cache group; below sa_v1.c and sa_v1_check.c. */
#include "sa.h"

size_t sa_v1_row_bytes(const struct sa *s)
{
	const struct mdl_geom *g = &s->o.geom;

	return (size_t)(g->kv_heads / s->o.tp) * (size_t)g->head_dim * (size_t)g->dtype_bytes;
}

int sa_v1_buf(const struct sa *s, bool value, int l)
{
	l -= sa_pp_first(s, sa_pp_stage(s, l)); /* a PP stage's buffers hold its layers */
	return s->kv_layout == SA_KV_SPLIT ? 2 * l + (value ? 1 : 0) : l;
}

uint8_t *sa_v1_seg(struct sa *s, int dp, int64_t *const *blk, bool value, int l, size_t t, int k)
{
	return sa_v1_seg_id(s, dp, k, blk[k][t / (size_t)s->o.block_size], value, l, t);
}

uint8_t *sa_v1_seg_id(struct sa *s, int dp, int k, int64_t id, bool value, int l, size_t t)
{
	const struct mdl_geom *g = &s->o.geom;
	size_t bs = (size_t)s->o.block_size, hrow = mdl_kv_row_bytes(g);

	return kv1_block(sa_pp_worker(s, dp, k, sa_pp_stage(s, l)), sa_v1_buf(s, value, l), id) +
	       sa_v1_layout_off(s->kv_layout, bs, (size_t)(g->kv_heads / s->o.tp), hrow, value,
	                        t % bs, 0);
}

size_t sa_v1_hstride(const struct sa *s)
{
	return sa_v1_layout_hstride(s->kv_layout, (size_t)s->o.block_size,
	                            mdl_kv_row_bytes(&s->o.geom));
}

uint8_t *sa_v1_seg_g(struct sa *s, int dp, int64_t *const *blk, const struct sa_glay *gl,
                     bool value, int l, size_t t, int k)
{
	size_t bs = (size_t)s->o.block_size, b = t / bs, g;
	if (!gl || gl->ng < 2)
		return sa_v1_seg(s, dp, blk, value, l, t, k);
	g = (size_t)sa_hyb_group(s, l);
	if (b < gl->first[g] || b - gl->first[g] >= gl->cnt[g])
		return NULL;
	return sa_v1_seg_id(s, dp, k, blk[k][gl->off[g] + b - gl->first[g]], value, l, t);
}
