/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_tensor: the pdkv tensor blob — the payload format of every tensor on the MooncakePipe
 * (vLLM pickles torch tensors there, which a C program cannot speak) — and tensor helpers.
 *
 * pdkv tensor blob, version 1. All integers little-endian; the blob is exactly 48 + nbytes long.
 *   off  size  field
 *     0     4  magic    "PDKT"
 *     4     2  version  u16 = 1
 *     6     1  dtype    u8: 0 bool (1 byte, 0/1), 1 int64, 2 float32, 3 bfloat16, 4 float16,
 *                       5 uint8
 *     7     1  ndim     u8, 1..4 (vLLM asserts len(shape) > 0)
 *     8    32  shape    4 x i64, dims >= 0; dims past ndim are 0
 *    40     8  nbytes   u64 = product(shape) x element size
 *    48  nbytes data    row-major (C order), elements little-endian
 * None travels as vLLM's sentinel: int64, ndim 1, shape [1], data NONE_INT = -150886311; any
 * decoded 1-element int64 tensor holding that value is None (same ambiguity as vLLM).
 * A decoder rejects (KVC_ERR_PROTOCOL) a bad magic/version/dtype/ndim, a negative dim, a shape
 * whose byte size overflows or differs from nbytes, non-zero unused dims, and any length other
 * than 48 + nbytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvc/kvc_internal.h"
#include "pd_log.h"

#define MAX_TENSOR_BYTES (1ull << 40) /* a sanity bound far beyond any KV item */

size_t kvc_dtype_size(int dtype)
{
	switch (dtype) {
	case KVC_BOOL:
	case KVC_U8:
		return 1;
	case KVC_BF16:
	case KVC_F16:
		return 2;
	case KVC_F32:
		return 4;
	case KVC_I64:
		return 8;
	default:
		return 0;
	}
}

bool kvc_tensor_is_none(const struct kvc_tensor *t)
{
	return !t || t->ndim == 0;
}

/* product(shape) * elsize without overflow; 0 or -1 */
static int shape_bytes(int dtype, int ndim, const int64_t *shape, uint64_t *out)
{
	uint64_t n = kvc_dtype_size(dtype);
	if (!n || ndim < 1 || ndim > KVC_MAX_NDIM)
		return -1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > MAX_TENSOR_BYTES / (uint64_t)shape[i])
			return -1;
		n *= (uint64_t)shape[i];
	}
	*out = n;
	return 0;
}

int kvc_tensor_check(const struct kvc_tensor *t)
{
	uint64_t n;
	if (kvc_tensor_is_none(t))
		return 0;
	if (shape_bytes(t->dtype, t->ndim, t->shape, &n) < 0 || n != t->nbytes || (n && !t->data))
		return KVC_ERR_PROTOCOL;
	return 0;
}

size_t kvc_blob_size(const struct kvc_tensor *t)
{
	return KVC_BLOB_HDR + (kvc_tensor_is_none(t) ? 8 : t->nbytes);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_header(const struct kvc_tensor *t, uint8_t *b)
{
	memset(b, 0, KVC_BLOB_HDR);
	memcpy(b, KVC_BLOB_MAGIC, 4);
	put_le(b + 4, KVC_BLOB_VERSION, 2);
	b[6] = (uint8_t)t->dtype;
	b[7] = (uint8_t)t->ndim;
	for (int i = 0; i < t->ndim; i++)
		put_le(b + 8 + 8 * i, (uint64_t)t->shape[i], 8);
	put_le(b + 40, t->nbytes, 8);
}

int kvc_blob_encode_header(const struct kvc_tensor *t, void *dst)
{
	if (kvc_tensor_is_none(t) || kvc_tensor_check(t) < 0)
		return KVC_ERR_PROTOCOL;
	put_header(t, dst);
	return 0;
}

int kvc_blob_encode(const struct kvc_tensor *t, void *dst, size_t cap)
{
	uint8_t *b = dst;
	int64_t none_val = KVC_NONE_INT, one = 1;
	struct kvc_tensor none = {.dtype = KVC_I64, .ndim = 1, .data = &none_val, .nbytes = 8};
	none.shape[0] = one;
	if (kvc_tensor_is_none(t))
		t = &none;
	if (kvc_tensor_check(t) < 0 || cap < KVC_BLOB_HDR + t->nbytes)
		return KVC_ERR_PROTOCOL;
	put_header(t, b);
	if (t->nbytes)
		memcpy(b + KVC_BLOB_HDR, t->data, t->nbytes);
	return 0;
}

/* Validates a blob's header into *t (data NULL, nbytes set); 1 = None, 0 = a tensor. The
 * header is copied first and read once: the blob may sit in memory a peer can write. */
static int parse_header(const void *blob, size_t n, struct kvc_tensor *t)
{
	uint8_t b[KVC_BLOB_HDR + 8];
	uint64_t want, nb;
	memset(t, 0, sizeof(*t));
	if (n < KVC_BLOB_HDR) {
		pd_err("kvc: tensor blob: bad magic or short blob (%zu bytes); expected \"PDKT\"",
		       n);
		return KVC_ERR_PROTOCOL;
	}
	memcpy(b, blob, n >= sizeof(b) ? sizeof(b) : KVC_BLOB_HDR);
	if (memcmp(b, KVC_BLOB_MAGIC, 4) != 0) {
		pd_err("kvc: tensor blob: bad magic or short blob (%zu bytes); expected \"PDKT\"",
		       n);
		return KVC_ERR_PROTOCOL;
	}
	if (get_le(b + 4, 2) != KVC_BLOB_VERSION) {
		pd_err("kvc: tensor blob: version %u, expected %d", (unsigned)get_le(b + 4, 2),
		       KVC_BLOB_VERSION);
		return KVC_ERR_PROTOCOL;
	}
	t->dtype = b[6];
	t->ndim = b[7];
	for (int i = 0; i < KVC_MAX_NDIM; i++) {
		int64_t d = (int64_t)get_le(b + 8 + 8 * i, 8);
		if (i < t->ndim)
			t->shape[i] = d;
		else if (d != 0) {
			pd_err("kvc: tensor blob: dim %d = %lld past ndim %d", i, (long long)d,
			       t->ndim);
			return KVC_ERR_PROTOCOL;
		}
	}
	nb = get_le(b + 40, 8);
	if (shape_bytes(t->dtype, t->ndim, t->shape, &want) < 0 || want != nb ||
	    n - KVC_BLOB_HDR != nb) {
		pd_err("kvc: tensor blob: dtype %d ndim %d nbytes %llu inconsistent with shape or "
		       "blob length %zu",
		       t->dtype, t->ndim, (unsigned long long)nb, n);
		return KVC_ERR_PROTOCOL;
	}
	if (t->dtype == KVC_I64 && nb == 8 &&
	    (int64_t)get_le(b + KVC_BLOB_HDR, 8) == KVC_NONE_INT) {
		memset(t, 0, sizeof(*t));
		return 1; /* None */
	}
	t->nbytes = nb;
	return 0;
}

int kvc_blob_decode_inplace(void *blob, size_t n, struct kvc_tensor *out)
{
	int rc = parse_header(blob, n, out);
	if (rc == 0)
		out->data = (uint8_t *)blob + KVC_BLOB_HDR;
	else
		memset(out, 0, sizeof(*out));
	return rc;
}

int kvc_blob_decode(const void *blob, size_t n, struct kvc_tensor *out)
{
	const uint8_t *b = blob;
	struct kvc_tensor t;
	size_t nb;
	int rc;
	memset(out, 0, sizeof(*out));
	rc = parse_header(blob, n, &t);
	if (rc)
		return rc < 0 ? rc : 0; /* 1: None */
	nb = t.nbytes;
	t.data = malloc(nb ? nb : 1);
	if (!t.data)
		return KVC_ERR_ALLOC;
	if (nb)
		memcpy(t.data, b + KVC_BLOB_HDR, nb);
	*out = t;
	return 0;
}

int kvc_tensor_alloc(struct kvc_tensor *t, int dtype, int ndim, const int64_t *shape)
{
	uint64_t n;
	memset(t, 0, sizeof(*t));
	if (shape_bytes(dtype, ndim, shape, &n) < 0)
		return KVC_ERR_PROTOCOL;
	t->data = calloc(1, n ? n : 1);
	if (!t->data)
		return KVC_ERR_ALLOC;
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
	t->nbytes = n;
	return 0;
}

int kvc_tensor_clone(struct kvc_tensor *dst, const struct kvc_tensor *src)
{
	int rc;
	memset(dst, 0, sizeof(*dst));
	if (kvc_tensor_is_none(src))
		return 0;
	if (kvc_tensor_check(src) < 0)
		return KVC_ERR_PROTOCOL;
	rc = kvc_tensor_alloc(dst, src->dtype, src->ndim, src->shape);
	if (rc == 0 && src->nbytes)
		memcpy(dst->data, src->data, src->nbytes);
	return rc;
}

int kvc_tensor_alloc_in(struct kvc_pool *pool, struct kvc_tensor *t, int dtype, int ndim,
                        const int64_t *shape)
{
	uint64_t n;
	uint8_t *b;
	memset(t, 0, sizeof(*t));
	if (shape_bytes(dtype, ndim, shape, &n) < 0)
		return KVC_ERR_PROTOCOL;
	b = kvc_pool_alloc_parked(pool, KVC_BLOB_HDR + n);
	if (!b)
		return KVC_ERR_ALLOC;
	kvc_pool_ref(pool);
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
	t->nbytes = n;
	t->data = b + KVC_BLOB_HDR;
	t->pool = pool;
	return 0;
}

void kvc_tensor_free(struct kvc_tensor *t)
{
	if (!t)
		return;
	if (t->pool) {
		kvc_pool_free(t->pool, (uint8_t *)t->data - KVC_BLOB_HDR);
		kvc_pool_unref(t->pool);
	} else {
		free(t->data);
	}
	memset(t, 0, sizeof(*t));
}

void kvc_item_free(struct kvc_item *it)
{
	if (!it)
		return;
	kvc_tensor_free(&it->tokens);
	kvc_tensor_free(&it->roi);
	kvc_tensor_free(&it->keys);
	kvc_tensor_free(&it->values);
	kvc_tensor_free(&it->hidden);
}

uint64_t kvc_item_nbytes(const struct kvc_item *it)
{
	const struct kvc_tensor *v[5] = {&it->tokens, &it->roi, &it->keys, &it->values,
	                                 &it->hidden};
	uint64_t n = 0;
	for (int i = 0; i < 5; i++)
		if (!kvc_tensor_is_none(v[i]))
			n += v[i]->nbytes;
	return n;
}
