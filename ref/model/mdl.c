/* SPDX-License-Identifier: Apache-2.0 */
/* mdl: the fake model's implementation — tokenizer, chat template, hash, KV/hidden computation,
 * footer, shard placement and greedy generation. The contract is in mdl.h. */
#include "mdl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pd_util.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL

void mdl_geom_default(struct mdl_geom *g)
{
	g->layers = 28;
	g->kv_heads = 4;
	g->head_dim = 128;
	g->dtype_bytes = 2;
	g->hidden_size = 3584;
}

int mdl_geom_check(const struct mdl_geom *g, char *err, size_t errsz)
{
	if (g->layers < 1 || g->layers > 1024) {
		snprintf(err, errsz, "kv layers: expected 1..1024, got %d", g->layers);
		return -EINVAL;
	}
	if (g->kv_heads < 1 || g->kv_heads > 1024) {
		snprintf(err, errsz, "kv heads: expected 1..1024, got %d", g->kv_heads);
		return -EINVAL;
	}
	if (g->head_dim < 1 || g->head_dim > 65536) {
		snprintf(err, errsz, "head dim: expected 1..65536, got %d", g->head_dim);
		return -EINVAL;
	}
	if (g->dtype_bytes != 1 && g->dtype_bytes != 2 && g->dtype_bytes != 4) {
		snprintf(err, errsz, "dtype bytes: expected 1, 2 or 4, got %d", g->dtype_bytes);
		return -EINVAL;
	}
	if (g->hidden_size < MDL_FOOTER_BYTES / 2 || g->hidden_size > 1 << 20) {
		snprintf(err, errsz, "hidden size: expected %d..%d, got %d", MDL_FOOTER_BYTES / 2,
		         1 << 20, g->hidden_size);
		return -EINVAL;
	}
	return 0;
}

size_t mdl_kv_row_bytes(const struct mdl_geom *g)
{
	return (size_t)g->head_dim * (size_t)g->dtype_bytes;
}

size_t mdl_kv_bytes_per_token(const struct mdl_geom *g, int kv_heads_shard)
{
	return 2 * (size_t)g->layers * (size_t)kv_heads_shard * (size_t)g->head_dim *
	       (size_t)g->dtype_bytes;
}

int mdl_tokenize(const char *text, size_t len, int64_t **ids, size_t *n)
{
	int64_t *v = malloc((len ? len : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		v[i] = (unsigned char)text[i];
	*ids = v;
	*n = len;
	return 0;
}

int mdl_detokenize(const int64_t *ids, size_t n, char **text, size_t *len)
{
	char *s = malloc(n + 1);
	size_t k = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] > MDL_EOS) {
			free(s);
			return -EINVAL;
		}
		if (ids[i] != MDL_EOS)
			s[k++] = (char)ids[i];
	}
	s[k] = 0;
	*text = s;
	if (len)
		*len = k;
	return 0;
}

char *mdl_chat_template(const struct mdl_msg *msgs, size_t n)
{
	size_t cap = 64, off = 0;
	char *s;

	for (size_t i = 0; i < n; i++)
		cap += strlen(msgs[i].role) + strlen(msgs[i].content) + 32;
	s = malloc(cap);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(s + off, cap - off, "<|im_start|>%s\n%s<|im_end|>\n",
		                        msgs[i].role, msgs[i].content);
	snprintf(s + off, cap - off, "<|im_start|>assistant\n");
	return s;
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

static inline uint64_t lane(uint64_t v, uint64_t w)
{
	return rotl64(v + w * P2, 31) * P1;
}

/* The four lanes folded into one word (inputs of 32 bytes or more). */
static inline uint64_t h64_merge(const uint64_t v[4])
{
	uint64_t h = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);

	for (int i = 0; i < 4; i++)
		h = (h ^ lane(0, v[i])) * P1 + P3;
	return h;
}

/* The last < 32 bytes: words, then bytes, then the avalanche. */
static inline uint64_t h64_tail(uint64_t h, const uint8_t *p, const uint8_t *end)
{
	while (end - p >= 8) {
		h ^= lane(0, load64(p));
		h = rotl64(h, 27) * P1 + P3;
		p += 8;
	}
	while (p < end) {
		h ^= (uint64_t)(*p++) * P3;
		h = rotl64(h, 11) * P1;
	}
	return mix64(h);
}

/* Four independent lanes over 32-byte blocks, then words, then bytes, then an avalanche:
 * one flipped input bit changes about half the output bits. */
uint64_t mdl_hash64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;

		do {
			v1 = lane(v1, load64(p));
			v2 = lane(v2, load64(p + 8));
			v3 = lane(v3, load64(p + 16));
			v4 = lane(v4, load64(p + 24));
			p += 32;
		} while (end - p >= 32);
		h = h64_merge((const uint64_t[4]){v1, v2, v3, v4});
	} else {
		h = seed + P3;
	}
	h += (uint64_t)len;
	return h64_tail(h, p, end);
}

void mdl_h64_init(struct mdl_h64 *h, uint64_t seed)
{
	h->v[0] = seed + P1 + P2;
	h->v[1] = seed + P2;
	h->v[2] = seed;
	h->v[3] = seed - P1;
	h->seed = seed;
	h->len = 0;
	h->nbuf = 0;
}

static inline void h64_block(uint64_t *v, const uint8_t *p)
{
	v[0] = lane(v[0], load64(p));
	v[1] = lane(v[1], load64(p + 8));
	v[2] = lane(v[2], load64(p + 16));
	v[3] = lane(v[3], load64(p + 24));
}

void mdl_h64_update(struct mdl_h64 *h, const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t v[4] = {h->v[0], h->v[1], h->v[2], h->v[3]};

	h->len += len;
	if (h->nbuf) {
		size_t k = 32 - h->nbuf < len ? 32 - h->nbuf : len;

		memcpy(h->buf + h->nbuf, p, k);
		h->nbuf += (unsigned)k;
		p += k;
		if (h->nbuf < 32)
			return;
		h64_block(v, h->buf);
		h->nbuf = 0;
	}
	/* whole blocks go through the lanes (as in the one-shot form); < 32 bytes wait */
	while (end - p >= 32) {
		h64_block(v, p);
		p += 32;
	}
	memcpy(h->buf, p, (size_t)(end - p));
	h->nbuf = (unsigned)(end - p);
	memcpy(h->v, v, sizeof(v));
}

uint64_t mdl_h64_final(const struct mdl_h64 *st)
{
	const uint8_t *p = st->buf, *end = p + st->nbuf;
	const uint64_t *v = st->v;
	uint64_t h;

	if (st->len >= 32) {
		h = h64_merge(v);
	} else {
		h = st->seed + P3;
	}
	h += st->len;
	return h64_tail(h, p, end);
}

uint64_t mdl_kv_part_seed(int part)
{
	return mix64(MDL_KV_CHECKSUM_SEED + (uint64_t)(part + 1) * P1);
}

static void put_le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

uint64_t mdl_kv_combine(const uint64_t *sums, int nparts)
{
	struct mdl_h64 h;
	uint8_t b[8];

	mdl_h64_init(&h, MDL_KV_CHECKSUM_SEED);
	for (int i = 0; i < nparts; i++) {
		put_le64(b, sums[i]);
		mdl_h64_update(&h, b, sizeof(b));
	}
	return mdl_h64_final(&h);
}

/* Row weights: word i of a row of n words (the last one zero-padded) weighs 2(n - i) + 1, odd,
 * so a flipped bit anywhere changes the row's sum; row r weighs ((seed ^ r P2) P1) | 1. */
void mdl_ks_init(struct mdl_ks *ks, uint64_t seed, size_t row_bytes)
{
	uint64_t f = row_bytes / 8, n = (row_bytes + 7) / 8;

	ks->seed = seed;
	ks->acc = 0;
	ks->rows = 0;
	ks->rb = row_bytes ? row_bytes : 1;
	/* sum over the full words i < f of the weight, and of i times the weight (exact integers
	 * before the reduction mod 2^64; f(f-1)/2 and (f-1)f(2f-1)/6 are whole) */
	ks->c0 = f * (2 * n + 1) - f * (f ? f - 1 : 0);
	ks->c1 = f ? (2 * n + 1) * (f * (f - 1) / 2) - 2 * ((f - 1) * f * (2 * f - 1) / 6) : 0;
}

static inline void ks_add(struct mdl_ks *ks, uint64_t r)
{
	/* distinct odd weights, one multiply (a row swap changes the sum by (R_r - R_s)(m_s - m_r))
	 */
	ks->acc += r * ((ks->seed ^ (ks->rows * P2)) * P1 | 1);
	ks->rows++;
}

/* One row's weighted sum s1 + 2 s2, s1 the sum of its n words and s2 = sum of (n - i) w_i (a
 * Fletcher chain), for any row (ks_rows32 takes whole 32-byte rows on little-endian hosts). */
static uint64_t ks_row(const uint8_t *p, size_t rb)
{
	size_t f = rb / 8, tail = rb % 8, i = 0;
	uint64_t s1 = 0, s2 = 0, w;

	for (; i < f; i++) {
		s1 += load64(p + 8 * i);
		s2 += s1;
	}
	if (tail) {
		w = 0;
		memcpy(&w, p + 8 * f, tail);
		s1 += w;
		s2 += s1;
	}
	return s1 + 2 * s2;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Rows of whole 32-byte blocks, as many as len holds; returns the bytes summed. One chain is
 * bound by its adds, below what memory delivers, so these rows run four chains over the words
 * i = c mod 4, as one vector of four words (one add per step on AVX2): chain c's s2_c weighs
 * word 4j + c by n/4 - j, and n - (4j + c) = 4(n/4 - j) - c. The same sums as ks_row
 * (test_row_sum checks them against the O(1) form). The landed KV is read here once, so this
 * is the V1 and V0 decodes' check per byte. */
typedef uint64_t ks_v4 __attribute__((vector_size(32)));

#ifdef __x86_64__
__attribute__((target_clones("avx2", "default")))
#endif
static size_t
ks_rows32(struct mdl_ks *ks, const uint8_t *p, size_t len)
{
	size_t f = ks->rb / 8, done = 0;

	for (; len - done >= ks->rb; done += ks->rb) {
		const uint8_t *q = p + done;
		ks_v4 a = {0, 0, 0, 0}, b = {0, 0, 0, 0};

		for (size_t i = 0; i < f; i += 4) {
			ks_v4 w;
			memcpy(&w, q + 8 * i, sizeof(w));
			a += w;
			b += a;
		}
		ks_add(ks, a[0] + a[1] + a[2] + a[3] +
		               2 * (4 * (b[0] + b[1] + b[2] + b[3]) - a[1] - 2 * a[2] - 3 * a[3]));
	}
	return done;
}
#define KS_ROWS32 1
#endif

void mdl_ks_update(struct mdl_ks *ks, const void *data, size_t len)
{
	const uint8_t *p = data;

#ifdef KS_ROWS32
	if (ks->rb % 32 == 0 && len >= ks->rb) {
		size_t done = ks_rows32(ks, p, len);
		p += done;
		len -= done;
	}
#endif
	for (; len >= ks->rb; p += ks->rb, len -= ks->rb)
		ks_add(ks, ks_row(p, ks->rb));
	if (len) { /* a short last piece: the row's missing bytes count as zeros */
		uint8_t *row = calloc(1, ks->rb);

		if (row) {
			memcpy(row, p, len);
			ks_add(ks, ks_row(row, ks->rb));
			free(row);
		} else {
			ks_add(ks,
			       ~0ULL); /* cannot be a written row's sum by design: fails closed */
		}
	}
}

void mdl_ks_affine_row(struct mdl_ks *ks, uint64_t a, uint64_t b)
{
	uint64_t f = ks->rb / 8, tail = ks->rb % 8, r = a * ks->c0 + b * ks->c1;

	if (tail) /* the last word, cut to tail bytes, weighs 3 */
		r += 3 * ((a + f * b) & ((1ULL << (8 * tail)) - 1));
	ks_add(ks, r);
}

uint64_t mdl_ks_piece(const struct mdl_ks *ks, uint64_t row0, const void *data, size_t len)
{
	struct mdl_ks t = *ks;

	t.acc = 0;
	t.rows = row0;
	mdl_ks_update(&t, data, len);
	return t.acc;
}

uint64_t mdl_ks_final(const struct mdl_ks *ks)
{
	return mix64(ks->acc + ks->rows * P3 + ks->seed);
}

uint64_t mdl_kv_checksum(const void *keys, const void *values, size_t kv_bytes_each, int layers,
                         size_t row_bytes)
{
	struct mdl_h64 h;
	size_t each;
	uint8_t b[8];

	if (layers < 1)
		layers = 1;
	each = kv_bytes_each / (size_t)layers;
	mdl_h64_init(&h, MDL_KV_CHECKSUM_SEED);
	for (int p = 0; p < 2 * layers; p++) {
		const uint8_t *base = p < layers ? keys : values;
		int l = p % layers;
		size_t off = (size_t)l * each, len = l == layers - 1 ? kv_bytes_each - off : each;
		struct mdl_ks ks;

		mdl_ks_init(&ks, mdl_kv_part_seed(p), row_bytes);
		mdl_ks_update(&ks, base + off, len);
		put_le64(b, mdl_ks_final(&ks));
		mdl_h64_update(&h, b, sizeof(b));
	}
	return mdl_h64_final(&h);
}

/* Fills len bytes from a counter stream seeded by seed: one full mix per call, then one
 * multiply per 8 bytes (the hidden rows; KV rows are mdl_kv_row_put's). */
static void fill_stream(uint8_t *dst, size_t len, uint64_t seed)
{
	uint64_t s = mix64(seed), w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		s += P1;
		w = (s ^ (s >> 31)) * 0xD6E8FEB86659FD93ULL;
		w ^= w >> 32;
		memcpy(dst + i, &w, 8);
	}
	if (i < len) {
		s += P1;
		w = (s ^ (s >> 31)) * 0xD6E8FEB86659FD93ULL;
		w ^= w >> 32;
		memcpy(dst + i, &w, len - i);
	}
}

void mdl_kv_free(struct mdl_kv *kv)
{
	free(kv->keys);
	free(kv->values);
	free(kv->hidden);
	memset(kv, 0, sizeof(*kv));
}

void mdl_kv_prefix(const int64_t *tokens, size_t n, uint64_t *pre)
{
	uint64_t prefix = 0x70646b76ULL; /* "pdkv" */

	for (size_t t = 0; t < n; t++) {
		prefix = mix64(prefix ^ ((uint64_t)tokens[t] * P2 + t));
		pre[t] = prefix;
	}
}

void mdl_kv_row_ab(uint64_t pre_t, int layer, int head, bool value, uint64_t *a, uint64_t *b)
{
	uint64_t base = pre_t ^ ((uint64_t)layer << 40) ^ ((uint64_t)head << 20);
	uint64_t s = value ? base * 2 + 2 + P3 : base * 2 + 1;

	*a = mix64(s);
	*b = (*a ^ (*a >> 29)) * P2 | 1;
}

void mdl_kv_row_put(const struct mdl_geom *g, uint64_t a, uint64_t b, uint8_t *dst)
{
	size_t len = mdl_kv_row_bytes(g), i = 0;
	uint64_t w = a;

	for (; i + 8 <= len; i += 8, w += b)
		memcpy(dst + i, &w, 8);
	if (i < len)
		memcpy(dst + i, &w, len - i);
}

void mdl_kv_row(const struct mdl_geom *g, uint64_t pre_t, int layer, int head, bool value,
                uint8_t *dst)
{
	uint64_t a, b;

	mdl_kv_row_ab(pre_t, layer, head, value, &a, &b);
	mdl_kv_row_put(g, a, b, dst);
}

void mdl_hidden_row(const struct mdl_geom *g, uint64_t pre_t, uint8_t *dst)
{
	fill_stream(dst, (size_t)g->hidden_size * 2, pre_t ^ 0x68696464656eULL);
}

int mdl_kv_compute(const struct mdl_geom *g, const int64_t *tokens, size_t n, int head0, int nheads,
                   int shard, int nshards, struct mdl_kv *out)
{
	size_t row = mdl_kv_row_bytes(g);
	size_t hrow = (size_t)g->hidden_size * 2;
	uint64_t *pre = NULL;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (n == 0 || head0 < 0 || nheads < 1 || head0 + nheads > g->kv_heads)
		return -EINVAL;
	out->ntokens = n;
	out->head0 = head0;
	out->nheads = nheads;
	out->bytes_each = (size_t)g->layers * n * (size_t)nheads * row;
	out->hidden_bytes = n * hrow;
	out->keys = malloc(out->bytes_each);
	out->values = malloc(out->bytes_each);
	out->hidden = malloc(out->hidden_bytes);
	if (!out->keys || !out->values || !out->hidden)
		goto out;
	pre = malloc(n * sizeof(*pre));
	if (!pre)
		goto out;
	mdl_kv_prefix(tokens, n, pre);
	for (size_t t = 0; t < n; t++)
		mdl_hidden_row(g, pre[t], out->hidden + t * hrow);
	/* Layer-major like the layout, so both arrays are written front to back. */
	for (int l = 0; l < g->layers; l++) {
		for (size_t t = 0; t < n; t++) {
			for (int h = 0; h < nheads; h++) {
				size_t off =
				    (((size_t)l * n + t) * (size_t)nheads + (size_t)h) * row;

				mdl_kv_row(g, pre[t], l, head0 + h, false, out->keys + off);
				mdl_kv_row(g, pre[t], l, head0 + h, true, out->values + off);
			}
		}
	}
	mdl_footer_write(out->hidden,
	                 mdl_kv_checksum(out->keys, out->values, out->bytes_each, g->layers, row),
	                 n, (uint32_t)shard, (uint32_t)nshards);
	ret = 0;
out:
	free(pre);
	if (ret)
		mdl_kv_free(out);
	return ret;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void mdl_footer_write(uint8_t *hidden, uint64_t checksum, uint64_t ntokens, uint32_t shard,
                      uint32_t nshards)
{
	memcpy(hidden, MDL_FOOTER_MAGIC, 8);
	put_le64(hidden + 8, checksum);
	put_le64(hidden + 16, ntokens);
	put_le64(hidden + 24, (uint64_t)shard | ((uint64_t)nshards << 32));
}

int mdl_footer_read(const uint8_t *hidden, size_t hidden_bytes, uint64_t *checksum,
                    uint64_t *ntokens, uint32_t *shard, uint32_t *nshards)
{
	uint64_t sn;

	if (!hidden || hidden_bytes < MDL_FOOTER_BYTES || memcmp(hidden, MDL_FOOTER_MAGIC, 8))
		return -EBADMSG;
	*checksum = get_le64(hidden + 8);
	*ntokens = get_le64(hidden + 16);
	sn = get_le64(hidden + 24);
	*shard = (uint32_t)sn;
	*nshards = (uint32_t)(sn >> 32);
	return 0;
}

void mdl_kv_place_shard(const struct mdl_geom *g, size_t ntokens, const uint8_t *shard, int head0,
                        int nheads, uint8_t *full)
{
	size_t row = (size_t)g->head_dim * (size_t)g->dtype_bytes;

	for (size_t lt = 0; lt < (size_t)g->layers * ntokens; lt++)
		memcpy(full + (lt * (size_t)g->kv_heads + (size_t)head0) * row,
		       shard + lt * (size_t)nheads * row, (size_t)nheads * row);
}

static const char alphabet[] = "eeettaaoinnshrdlcumwfgypbvk      ,.";

void mdl_gen_init(struct mdl_gen *gs, uint64_t seed, bool ignore_eos)
{
	gs->state = mix64(seed ^ 0x67656e6572617465ULL);
	gs->i = 0;
	gs->ignore_eos = ignore_eos;
	gs->done = false;
}

int64_t mdl_gen_next(struct mdl_gen *gs)
{
	uint64_t h = mix64(gs->state + (uint64_t)gs->i * P1);
	int64_t tok;

	if (!gs->ignore_eos && gs->i > 0 && (h & 0xff) == 0) {
		tok = MDL_EOS;
		gs->done = true;
	} else {
		tok = (unsigned char)alphabet[(h >> 8) % (sizeof(alphabet) - 1)];
	}
	gs->state = mix64(gs->state ^ ((uint64_t)tok + 1) * P2);
	gs->i++;
	return tok;
}

void mdl_pace(uint64_t t0_ns, uint64_t ns_per_token, size_t ntokens)
{
	uint64_t want = ns_per_token * (uint64_t)ntokens, spent = pd_now_ns() - t0_ns;
	struct timespec ts;

	if (want <= spent)
		return;
	want -= spent;
	ts.tv_sec = (time_t)(want / 1000000000ULL);
	ts.tv_nsec = (long)(want % 1000000000ULL);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
