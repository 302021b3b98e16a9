/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_layout: how the stand-in's V1 workers lay the fake model's KV out in kv1 buffers, per
 * the vLLM release it plays (which regions vLLM registers with Mooncake, and what they hold). */
#ifndef SA_V1_LAYOUT_H
#define SA_V1_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "cfg/cfg_vllm.h"
#include "kv1/kv1.h"

enum sa_kv_layout {
	/* two buffers per layer, [L0.K, L0.V, L1.K, ...]; a block of each holds the block's
	 * tokens' rows, token-major */
	SA_KV_SPLIT = 0,
	/* --kv-mla: one buffer per layer, a block holds per token its K row then its V row */
	SA_KV_MLA,
	/* one buffer per layer, a block = [K part | V part], each part token-major (vLLM's
	 * LBHNC era: one registered region per layer holding K and V; see sa_v1_layout.c) */
	SA_KV_JOINED,
	/* one buffer per layer, a block = [head][token][K | V] (vLLM's LBHNC: a rank's heads one
	 * after another, each head's tokens' K and V cells), so a heterogeneous-TP head slice is a
	 * byte range of the block; the Bl default on host memory (sa_v1_layout.c) */
	SA_KV_HEADS,
};

/* The layout of a stand-in playing generation gen (its wire shape) with or without MLA; gpu: its
 * KV in device memory (the GPU tier's copies keep SA_KV_JOINED there). */
enum sa_kv_layout sa_v1_layout(bool mla, enum cfg_gen gen, bool gpu);
const char *sa_v1_layout_name(enum sa_kv_layout lay);
/* kv1 options of that layout: layer_bufs, nbufs, block_len and mla; part = bytes of one layer's
 * keys (or values) of one block on this rank (block_size x the rank's heads x head_dim x
 * dtype). */
void sa_v1_layout_opts(enum sa_kv_layout lay, int layers, size_t part, struct kv1_opts *o);
/* Bytes from one head's row to the next head's row of the same rank, token and K or V in a block
 * of the layout (0: the rank's heads of a token are adjacent rows); hrow = one head's row
 * (head_dim x dtype bytes). */
size_t sa_v1_layout_hstride(enum sa_kv_layout lay, size_t block_size, size_t hrow);
/* Where head h's row of keys (or values) of token tok (0..block_size-1) of a rank's block sits,
 * in bytes from the block's start; heads = the rank's heads. */
size_t sa_v1_layout_off(enum sa_kv_layout lay, size_t block_size, size_t heads, size_t hrow,
                        bool value, size_t tok, size_t h);

#endif
