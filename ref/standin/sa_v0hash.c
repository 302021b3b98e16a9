/* sa_v0hash: a V0 drop_select's arrival hook (kvc_arrive_fn) that computes the KV checksum of the
 * received keys and values (each layer's a part, on a few threads) while the pipe still reads the
 * tensors after them,
 * so verifying the KV costs (almost) nothing on the hand-off's timed path. */
#include <stdlib.h>
#include <string.h>

#include "pd_par.h"
#include "sa.h"

/* Part p of mdl_kv_checksum: keys' parts need nothing more, values' parts wait for them. */
static void hash_part(void *ud, int part, int worker)
{
	struct sa_v0hash *h = ud;
	int L = h->layers, l = part % L;
	size_t each = h->n / (size_t)L, off = (size_t)l * each,
	       len = l == L - 1 ? h->n - off : each;
	const uint8_t *base = h->k;

	(void)worker;
	if (part >= L) {
		pthread_mutex_lock(&h->mu);
		while (!h->v && !h->end)
			pthread_cond_wait(&h->cv, &h->mu);
		base = h->v; /* set once the values were read: they do not change while we hash */
		pthread_mutex_unlock(&h->mu);
		if (!base)
			return;
	}
	struct mdl_ks ks;

	mdl_ks_init(&ks, mdl_kv_part_seed(part), h->row_bytes);
	mdl_ks_update(&ks, base + off, len);
	h->sums[part] = mdl_ks_final(&ks);
}

static void *hash_main(void *arg)
{
	struct sa_v0hash *h = arg;

	pd_par_run(pd_par_threads(), 2 * h->layers, hash_part, h);
	if (h->v) {
		h->sum = mdl_kv_combine(h->sums, 2 * h->layers);
		h->ok = true;
	}
	return NULL;
}

void sa_v0hash_init(struct sa_v0hash *h, int layers, size_t row_bytes)
{
	memset(h, 0, sizeof(*h));
	h->layers = layers < 1 ? 1 : layers;
	h->row_bytes = row_bytes;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
}

/* Waits for the thread (if any); the result stays readable. */
static void finish(struct sa_v0hash *h)
{
	if (!h->running)
		return;
	pthread_mutex_lock(&h->mu);
	h->end = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->th, NULL);
	h->running = false;
}

void sa_v0hash_arrive(void *ud, int i, const struct kvc_tensor *t)
{
	struct sa_v0hash *h = ud;
	bool tensor = t && t->ndim > 0 && t->data && t->nbytes > 0;

	switch (i) {
	case 0: /* a new answer: forget the last one */
		finish(h);
		h->k = h->v = NULL;
		h->n = 0;
		h->end = h->ok = false;
		break;
	case 2:
		if (!tensor || h->running)
			break;
		free(h->sums);
		if (!(h->sums = calloc(2 * (size_t)h->layers, sizeof(*h->sums))))
			break; /* the caller checks it the slow way */
		h->k = t->data;
		h->n = t->nbytes;
		h->running = pthread_create(&h->th, NULL, hash_main, h) == 0;
		break;
	case 3:
		if (!h->running)
			break;
		pthread_mutex_lock(&h->mu);
		if (tensor && t->nbytes == h->n)
			h->v = t->data;
		else
			h->end = true; /* not keys' twin: the caller checks it the slow way */
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->mu);
		break;
	case -1:
		finish(h);
		break;
	default:
		break;
	}
}

bool sa_v0hash_get(struct sa_v0hash *h, const void *k, const void *v, size_t n, uint64_t *sum)
{
	finish(h);
	if (!h->ok || h->k != k || h->v != v || h->n != n)
		return false;
	*sum = h->sum;
	return true;
}

void sa_v0hash_destroy(struct sa_v0hash *h)
{
	finish(h);
	free(h->sums);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
}
