/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v0hash: a V0 drop_select's hooks (kvc_piece_fn, kvc_arrive_fn) that compute the KV checksum
 * of the received keys and values chunk by chunk, as each chunk of their READs lands, so the check
 * reads bytes that are still in the cache and is done when the READ is. Over TCP the pieces are
 * each socket read's bytes, summed by the engine's lane thread that just received them (in that
 * core's cache); chunks the engine did not show come whole from the select's thread. Rows' sums
 * add up in any order (mdl_ks_piece); a row cut by a piece's edge is hashed once both of its
 * halves have landed, when the tensor has arrived. Pieces may come from several threads at
 * once: a lock guards the bookkeeping, the sums add up atomically. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sa.h"

static void reset(struct sa_v0hash *h)
{
	h->n = 0;
	h->bad = h->ok = false;
	h->k = h->v = NULL;
	for (int j = 0; j < 2; j++) {
		h->seen[j] = 0;
		h->nedge[j] = 0;
		h->base[j] = NULL;
	}
	if (h->acc)
		memset(h->acc, 0, 2 * (size_t)h->layers * sizeof(*h->acc));
}

void sa_v0hash_init(struct sa_v0hash *h, int layers, size_t row_bytes)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	h->layers = layers < 1 ? 1 : layers;
	h->row_bytes = row_bytes ? row_bytes : 1;
}

static void add_edge(struct sa_v0hash *h, int j, uint64_t row)
{
	if (h->nedge[j] == h->capedge[j]) {
		size_t cap = h->capedge[j] ? 2 * h->capedge[j] : 64;
		uint64_t *e = realloc(h->edge[j], cap * sizeof(*e));

		if (!e) {
			h->bad = true; /* the caller checks it the slow way */
			return;
		}
		h->edge[j] = e;
		h->capedge[j] = cap;
	}
	h->edge[j][h->nedge[j]++] = row;
}

/* Rows [row0, row0 + len / rb) of part p, whole rows only. Pieces may be summed on several
 * threads at once (the engine's lanes): the parts' sums add up atomically, in any order. */
static void hash_rows(struct sa_v0hash *h, int p, uint64_t row0, const uint8_t *d, size_t len)
{
	struct mdl_ks ks;

	mdl_ks_init(&ks, mdl_kv_part_seed(p), h->row_bytes);
	__atomic_fetch_add(&h->acc[p], mdl_ks_piece(&ks, row0, d, len), __ATOMIC_RELAXED);
}

/* Bytes [off, off + len) of tensor j (0 keys, 1 values) cut at the layers' parts: with edges
 * set, the rows cut by the piece's ends are noted (lock held); else its whole rows are summed. */
static void spans(struct sa_v0hash *h, int j, size_t off, const uint8_t *d, size_t len, bool edges)
{
	size_t rb = h->row_bytes, each = h->n / (size_t)h->layers;

	while (len) {
		int l = (int)(off / each);
		size_t take = ((size_t)l + 1) * each - off, po;

		take = take < len ? take : len;
		po = off - (size_t)l * each;
		if (edges) {
			if (po % rb)
				add_edge(h, j, off / rb);
			if ((po + take) % rb)
				add_edge(h, j, (off + take) / rb);
		} else {
			size_t lo = (po + rb - 1) / rb * rb, hi = (po + take) / rb * rb;

			if (hi > lo)
				hash_rows(h, j * h->layers + l, lo / rb, d + (lo - po), hi - lo);
		}
		off += take;
		d += take;
		len -= take;
	}
}

/* Checks the piece against the layout (the keys' first piece sets it) and notes it; false: it
 * does not fit (h->bad). Lock held. */
static bool take_piece(struct sa_v0hash *h, int j, size_t off, const uint8_t *d, size_t len,
                       size_t total)
{
	if (h->bad)
		return false;
	if (!h->n) {
		size_t each = total / (size_t)h->layers;

		if (total == 0 || total % (size_t)h->layers || each % h->row_bytes ||
		    (!h->acc && !(h->acc = calloc(2 * (size_t)h->layers, sizeof(*h->acc))))) {
			h->bad = true;
			return false;
		}
		h->n = total;
	}
	if (total != h->n || off > total || len > total - off ||
	    (h->base[j] && h->base[j] != d - off)) {
		h->bad = true;
		return false;
	}
	h->base[j] = d - off;
	h->seen[j] += len;
	spans(h, j, off, d, len, true);
	return !h->bad;
}

void sa_v0hash_piece(void *ud, int i, size_t off, const void *data, size_t len, size_t total)
{
	struct sa_v0hash *h = ud;
	bool ok;

	if ((i != 2 && i != 3) || len == 0)
		return;
	pthread_mutex_lock(&h->mu);
	ok = take_piece(h, i - 2, off, data, len, total);
	pthread_mutex_unlock(&h->mu);
	if (ok) /* the layout and acc are fixed until the next answer's tokens arrive */
		spans(h, i - 2, off, data, len, false);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Tensor j has arrived whole at t: the rows cut by chunk edges, once each. */
static bool finish_tensor(struct sa_v0hash *h, int j, const struct kvc_tensor *t)
{
	size_t rb = h->row_bytes, each = h->n / (size_t)h->layers;
	uint64_t *e = h->edge[j], last = UINT64_MAX;

	if (h->bad || !h->n || !t || t->nbytes != h->n || h->seen[j] != h->n ||
	    h->base[j] != t->data)
		return false;
	if (h->nedge[j]) /* none when every piece ended on a row's edge (qsort wants an array) */
		qsort(e, h->nedge[j], sizeof(*e), cmp_u64);
	for (size_t q = 0; q < h->nedge[j]; q++) {
		size_t off = (size_t)e[q] * rb;
		int l;

		if (e[q] == last)
			continue;
		last = e[q];
		l = (int)(off / each);
		hash_rows(h, j * h->layers + l, (off - (size_t)l * each) / rb,
		          (const uint8_t *)t->data + off, rb);
	}
	return true;
}

static void arrive(struct sa_v0hash *h, int i, const struct kvc_tensor *t)
{
	if (i == 0) { /* a new answer: forget the last one */
		reset(h);
	} else if (i == 2 || i == 3) {
		if (!finish_tensor(h, i - 2, t)) {
			h->bad = true;
			return;
		}
		if (i == 2) {
			h->k = t->data;
			return;
		}
		uint64_t *sums = h->acc; /* the part sums replace the accumulators */
		size_t rows = h->n / (size_t)h->layers / h->row_bytes;

		for (int p = 0; p < 2 * h->layers; p++) {
			struct mdl_ks ks;

			mdl_ks_init(&ks, mdl_kv_part_seed(p), h->row_bytes);
			ks.acc = h->acc[p];
			ks.rows = rows;
			sums[p] = mdl_ks_final(&ks);
		}
		h->sum = mdl_kv_combine(sums, 2 * h->layers);
		h->v = t->data;
		h->ok = h->k != NULL;
	}
}

/* On the select's thread, while the engine's lanes may show the next tensor's pieces */
void sa_v0hash_arrive(void *ud, int i, const struct kvc_tensor *t)
{
	struct sa_v0hash *h = ud;

	pthread_mutex_lock(&h->mu);
	arrive(h, i, t);
	pthread_mutex_unlock(&h->mu);
}

bool sa_v0hash_get(struct sa_v0hash *h, const void *k, const void *v, size_t n, uint64_t *sum)
{
	if (!h->ok || h->bad || h->k != k || h->v != v || h->n != n)
		return false;
	*sum = h->sum;
	return true;
}

void sa_v0hash_destroy(struct sa_v0hash *h)
{
	pthread_mutex_destroy(&h->mu);
	free(h->acc);
	free(h->edge[0]);
	free(h->edge[1]);
	memset(h, 0, sizeof(*h));
}
