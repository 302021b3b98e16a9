/* SPDX-License-Identifier: Apache-2.0 */
/* mdl: pdkv's deterministic fake LLM — byte tokenizer, ChatML chat template, a KV cache with a
 * real model's geometry computed from the token ids, and greedy "generation" seeded by the KV
 * bytes.
 *
 * Contract (the stand-in, the runner and the tests rely on it):
 *  - Tokenizer: one token per byte of the UTF-8 text, id = byte value (0..255). Id 256 is EOS
 *    (detokenizes to ""). Vocabulary 257. Round trip is exact for any byte string.
 *  - KV: keys and values, each [layers, T, kv_heads, head_dim] elements of dtype_bytes bytes
 *    (vLLM's V0 connector layout). Row (layer l, position t, head h) is the little-endian words
 *    a, a + b, a + 2b, ... (the last one cut to the row's length), a and b drawn from the
 *    rolling prefix hash of tokens[0..t] (causal: a shared prefix gives identical rows), the
 *    layer, the head and K/V: cheap to write and to check (see mdl_ks). Bytes per token =
 *    2 * layers * kv_heads * head_dim * dtype_bytes (Qwen2.5-7B default: 2*28*4*128*2 = 57,344).
 *  - hidden: [T, hidden_size] elements of 2 bytes (bf16-sized), seeded per position; its first
 *    MDL_FOOTER_BYTES carry the footer {"PDKVMDL1", u64 kv checksum, u64 T, u32 shard, u32 nshards}
 *    (little endian). The checksum is mdl_kv_checksum of that item's keys then values.
 *  - Generation: seed = mdl_kv_checksum(keys, values) of the full (unsharded) KV; output token i
 *    is chosen by a hash of (seed, i, previous output token) from a fixed printable alphabet, with
 *    EOS when the draw's low byte is 0 (about 1 in 256) unless ignore_eos, and never as the
 *    first token: a prefill asked for one token always ends by length, so whether a workload
 *    passes does not hang on which prompts happen to draw EOS first (the stand-in's
 *    --fault eos-first forces that case). So missing, different or corrupted KV gives different
 *    text; identical KV gives identical text.
 *  - Compute time: prefill of T tokens costs at least ns_per_token * T (sleeps the remainder after
 *    the real work); each generated token costs ns_per_token. */
#ifndef MDL_H
#define MDL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MDL_VOCAB        257
#define MDL_EOS          256
#define MDL_FOOTER_BYTES 32
#define MDL_FOOTER_MAGIC "PDKVMDL1"

struct mdl_geom {
	int layers;      /* 28 */
	int kv_heads;    /* 4 */
	int head_dim;    /* 128 */
	int dtype_bytes; /* 2 (bf16); 1, 2 or 4 */
	int hidden_size; /* 3584; >= 16 so the footer fits in one row */
};
void mdl_geom_default(struct mdl_geom *g);
/* 0 or -EINVAL with a message naming the field in err. */
int mdl_geom_check(const struct mdl_geom *g, char *err, size_t errsz);
/* One row of keys or values: one head at one position, head_dim x dtype_bytes bytes. */
size_t mdl_kv_row_bytes(const struct mdl_geom *g);
/* keys + values bytes per token for kv_heads_shard heads (pass g->kv_heads for the whole). */
size_t mdl_kv_bytes_per_token(const struct mdl_geom *g, int kv_heads_shard);

/* ---- tokenizer ---- */
/* ids malloc'd (one per byte). 0 or -ENOMEM. */
int mdl_tokenize(const char *text, size_t len, int64_t **ids, size_t *n);
/* Bytes of ids (EOS skipped); -EINVAL if an id is outside 0..256. text malloc'd, NUL-terminated. */
int mdl_detokenize(const int64_t *ids, size_t n, char **text, size_t *len);

/* ChatML (Qwen2.5's template shape): for each message
 *   "<|im_start|>" role "\n" content "<|im_end|>\n"
 * then "<|im_start|>assistant\n". Returns malloc'd text or NULL. */
struct mdl_msg {
	const char *role;
	const char *content;
};
char *mdl_chat_template(const struct mdl_msg *msgs, size_t n);

/* ---- hashing ---- */
uint64_t mdl_hash64(const void *data, size_t len, uint64_t seed);
/* The KV checksum is a hash of per-part sums, so a check can run on several threads and start
 * on a layer as soon as it has landed: the KV is cut into 2 x layers parts (part p < layers: the
 * keys of layer p; part layers + l: the values of layer l), each summed on its own with an
 * mdl_ks seeded mdl_kv_part_seed(p), and the checksum is mdl_kv_combine of those sums:
 * mdl_hash64 of them as little-endian u64s, seed MDL_KV_CHECKSUM_SEED. A part's bytes are its
 * layer's rows (row_bytes = head_dim x dtype_bytes each) in (position, head) order.
 * mdl_kv_checksum does it for V0-shaped tensors [layers][T][heads][head_dim]: part l is the
 * l-th of layers equal slices. */
uint64_t mdl_kv_checksum(const void *keys, const void *values, size_t kv_bytes_each, int layers,
                         size_t row_bytes);
uint64_t mdl_kv_part_seed(int part);
uint64_t mdl_kv_combine(const uint64_t *sums, int nparts);
/* A part's sum, row by row: each row's 8-byte little-endian words (the last one zero-padded)
 * weighted 2(n - i) + 1 for word i of n, then the row weighted by an odd number drawn from the
 * seed and the row's index; the final value is mixed. Linear in the bytes, so a flipped bit, a
 * row from another prompt or position, or a block never written changes it (up to 2^-64), and
 * a row the fake model wrote (words a, a + b, a + 2b, ...: mdl_kv_row_ab) adds in O(1) with
 * mdl_ks_affine_row, without its bytes. update takes whole rows (a short last piece counts its
 * missing bytes as zeros). */
struct mdl_ks {
	uint64_t seed, acc, rows, c0, c1;
	size_t rb;
};
void mdl_ks_init(struct mdl_ks *ks, uint64_t seed, size_t row_bytes);
void mdl_ks_update(struct mdl_ks *ks, const void *data, size_t len);
void mdl_ks_affine_row(struct mdl_ks *ks, uint64_t a, uint64_t b);
uint64_t mdl_ks_final(const struct mdl_ks *ks);
/* What mdl_ks_update adds to ks->acc for len bytes (whole rows) that are rows row0.. of the
 * part. Row sums do not depend on each other, so a part's acc is the sum (mod 2^64) of its
 * pieces' in any order: set acc to it and rows to the part's row count, then mdl_ks_final. */
uint64_t mdl_ks_piece(const struct mdl_ks *ks, uint64_t row0, const void *data, size_t len);
/* Streaming form of mdl_hash64: init(seed), update(...) over pieces in order, final() gives the
 * same value as mdl_hash64 over the concatenation. */
struct mdl_h64 {
	uint64_t v[4], seed, len;
	uint8_t buf[32];
	unsigned nbuf;
};
void mdl_h64_init(struct mdl_h64 *h, uint64_t seed);
void mdl_h64_update(struct mdl_h64 *h, const void *data, size_t len);
uint64_t mdl_h64_final(const struct mdl_h64 *h);
#define MDL_KV_CHECKSUM_SEED 0x4b4b4b4bULL

/* ---- KV ---- */
struct mdl_kv {
	size_t ntokens;
	int head0, nheads; /* shard: heads [head0, head0+nheads) of the geometry */
	size_t bytes_each; /* bytes of keys (= bytes of values) */
	uint8_t *keys, *values;
	size_t hidden_bytes;
	uint8_t *hidden;
};
/* Computes the KV (and hidden with footer) of tokens for heads [head0, head0+nheads).
 * Does not sleep; see mdl_pace. 0 or -ENOMEM/-EINVAL. */
int mdl_kv_compute(const struct mdl_geom *g, const int64_t *tokens, size_t n, int head0, int nheads,
                   int shard, int nshards, struct mdl_kv *out);
void mdl_kv_free(struct mdl_kv *kv);
/* Row by row, without whole-KV buffers (what mdl_kv_compute does, in pieces): pre[t] = the
 * position seeds of tokens[0..t]; mdl_kv_row writes head_dim x dtype_bytes bytes of (layer,
 * position, head) of keys (value = false) or values; mdl_hidden_row one hidden row (no footer). */
void mdl_kv_prefix(const int64_t *tokens, size_t n, uint64_t *pre);
void mdl_kv_row(const struct mdl_geom *g, uint64_t pre_t, int layer, int head, bool value,
                uint8_t *dst);
/* The row's first word a and step b (odd): word i is a + i b; mdl_kv_row_put writes it. */
void mdl_kv_row_ab(uint64_t pre_t, int layer, int head, bool value, uint64_t *a, uint64_t *b);
void mdl_kv_row_put(const struct mdl_geom *g, uint64_t a, uint64_t b, uint8_t *dst);
void mdl_hidden_row(const struct mdl_geom *g, uint64_t pre_t, uint8_t *dst);
/* Footer: write into / read from hidden. read: 0, or -EBADMSG when the magic is wrong / too short.
 */
void mdl_footer_write(uint8_t *hidden, uint64_t checksum, uint64_t ntokens, uint32_t shard,
                      uint32_t nshards);
int mdl_footer_read(const uint8_t *hidden, size_t hidden_bytes, uint64_t *checksum,
                    uint64_t *ntokens, uint32_t *shard, uint32_t *nshards);
/* Copies a [L,T,hs,D] shard into a full [L,T,H,D] array at head head0. */
void mdl_kv_place_shard(const struct mdl_geom *g, size_t ntokens, const uint8_t *shard, int head0,
                        int nheads, uint8_t *full);

/* ---- generation ---- */
struct mdl_gen {
	uint64_t state;
	size_t i;
	bool ignore_eos;
	bool done;
};
void mdl_gen_init(struct mdl_gen *gs, uint64_t seed, bool ignore_eos);
/* Next token id (0..255 or MDL_EOS). After EOS, done is set. */
int64_t mdl_gen_next(struct mdl_gen *gs);

/* Sleeps so that the time since t0_ns is at least ns_per_token * ntokens. */
void mdl_pace(uint64_t t0_ns, uint64_t ns_per_token, size_t ntokens);

#endif
