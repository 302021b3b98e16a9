/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_layout: the stand-in's KV buffers per vLLM release — K and V registered apart, MLA, or
 * one region per layer holding K and V (vLLM's LBHNC layout); the kv1 options of each. */
#include "sa_v1_layout.h"

/*
 * What vLLM registers and sends for a non-MLA model (dense full attention, unpadded pages):
 *
 * Bn era, #36869 (b745e8b5d) up to #44528: get_required_kvcache_layout asks for "HND" (the order
 * inside a block: heads before tokens), not for a blocks-first tensor. register_kv_caches splits a
 * layer's tensor into K and V when TpKVTopology.split_k_and_v holds, i.e. unless the attention
 * backend's kv_cache_shape is blocks first (kv_connector/utils.py). FlashAttention, the default
 * CUDA backend, has shape (2, num_blocks, block_size, heads, head_dim): K and V are registered
 * as two regions per layer, block_len = one of them per block, and the Bn wire carries only
 * kv_caches_base_addr and block_lens (_expand_transfer_regions halves a blocks-first region
 * into K and V itself). That is SA_KV_SPLIT, which pdkv keeps for every shape before Bl.
 *
 * Bl era (mooncake_connector.py @ 00f4240e, after RFC #42082 and #44528):
 * get_required_kvcache_layout returns "LBHNC" for every non-MLA model (None with MLA). A layer's
 * cache is one [B, H, N, C] view of that layout with C = (head_size + head_size_v) x dtype bytes
 * (AttentionSpec.state_content_size_bytes, vllm/v1/kv_cache_interface.py; the enum in
 * vllm/v1/kv_cache_layout.py): a block holds, for each of the rank's KV heads in turn, each of
 * its block_size tokens' [K | V] cell. register_kv_caches: such a block is contiguous
 * (is_non_overlapping_and_dense(cache[0])), so region_caches = [cache]: ONE region per layer,
 *   base      = cache.data_ptr()
 *   block_len = cache.stride(0) x element_size = heads x block_size x (K + V) bytes
 *   kv_block_len = layer_spec.page_size_bytes / physical blocks per logical block
 *             = block_len (both K and V; not block_len / 2 as in the Bn code)
 *   registered_layer_names = the layer's attention module once ("model.layers.<l>.self_attn.attn"),
 *   registered_layer_indices = extract_layer_index(name), registered_group_indices = its
 *   KV-cache group (0 for a model with one group).
 * receive_kv_from_single_worker sends these lists as they are (kv_caches_base_addr, block_lens,
 * kv_block_lens, registered_layer_*), so one region per layer goes on the wire, and a prefill
 * aligns regions by (name, occurrence) and checks kv_block_len per region
 * (_validate_asymmetric_region_lengths).
 *
 * pdkv's SA_KV_HEADS is that block: for each of the rank's heads in turn, each of the block's
 * tokens' cell [K row of the head | V row of the head] (KVCacheLayout.LBHNC = [L, B, H, N, C],
 * vllm/v1/kv_cache_layout.py, read at 14f7a27c). vLLM's heterogeneous-TP plan
 * (_compute_sender_transfer_plan, mooncake_connector.py @ 00f4240e) moves a byte range of a
 * block, (rank % ratio) x the smaller rank's kv_block_len, which is a head range only in this
 * layout: heads are contiguous per rank (rank x H / tp), so the P block of P.tp = 1 holds D rank
 * 0's heads' bytes and then D rank 1's. SA_KV_JOINED, the Bl layout before (same wire, a block
 * [K rows | V rows] token-major), is kept for the GPU tier, whose kernel writes a rank's rows
 * [L][T][heads x D] and copies them into blocks in runs (sa_gpu.c): a head-major block would take
 * one copy per (head, token) there. A GPU-tier stand-in therefore moves correct KV only between
 * equal TP sizes.
 */
enum sa_kv_layout sa_v1_layout(bool mla, enum cfg_gen gen, bool gpu)
{
	if (mla)
		return SA_KV_MLA;
	if (kv1_shape_of(gen) < KV1_SHAPE_BL)
		return SA_KV_SPLIT;
	return gpu ? SA_KV_JOINED : SA_KV_HEADS;
}

const char *sa_v1_layout_name(enum sa_kv_layout lay)
{
	switch (lay) {
	case SA_KV_MLA:
		return "mla (one buffer per layer)";
	case SA_KV_JOINED:
		return "joined (one buffer per layer, block = [K | V])";
	case SA_KV_HEADS:
		return "LBHNC (one buffer per layer, block = [head][token][K | V])";
	default:
		return "split (K and V buffers per layer)";
	}
}

void sa_v1_layout_opts(enum sa_kv_layout lay, int layers, size_t part, struct kv1_opts *o)
{
	bool one = lay != SA_KV_SPLIT;

	o->mla = lay == SA_KV_MLA;
	o->layer_bufs = one ? 1 : 2;
	o->nbufs = one ? layers : 2 * layers;
	o->block_len = one ? 2 * part : part; /* kv1 sends kv_block_len = block_len */
}

size_t sa_v1_layout_hstride(enum sa_kv_layout lay, size_t block_size, size_t hrow)
{
	return lay == SA_KV_HEADS ? block_size * 2 * hrow : 0;
}

size_t sa_v1_layout_off(enum sa_kv_layout lay, size_t block_size, size_t heads, size_t hrow,
                        bool value, size_t tok, size_t h)
{
	size_t row = heads * hrow; /* a token's row of the rank's heads */

	switch (lay) {
	case SA_KV_MLA: /* per token: its K row, its V row */
		return tok * 2 * row + (value ? row : 0) + h * hrow;
	case SA_KV_JOINED: /* [K rows of the block | V rows] */
		return (value ? block_size * row : 0) + tok * row + h * hrow;
	case SA_KV_HEADS: /* [head][token][K | V] */
		return (h * block_size + tok) * 2 * hrow + (value ? hrow : 0);
	default: /* a buffer of keys or of values: token rows */
		return tok * row + h * hrow;
	}
}
