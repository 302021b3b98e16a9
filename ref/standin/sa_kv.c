/* sa_kv: the fake model's KV generated straight into where a connector keeps it (V1 blocks, V0
 * tensors) and hashed as it goes, and the received KV hashed and checked in place — no whole-KV
 * scratch copies, values on a second thread. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sa.h"

/* One pass over keys or values in the checksum's order (layer, position, rank's heads). */
struct pass {
	const struct mdl_geom *g;
	const uint64_t *pre;
	size_t n;
	int nsh;
	const struct sa_kvmap *map;
	bool value;
	bool gen;                   /* write the fake model's rows */
	bool verify;                /* compare with the fake model's rows */
	struct mdl_h64 *full, *per; /* hash states (NULL = none): whole KV, one per rank */
	uint8_t *scratch;           /* one segment */
	bool same;
};

static void run_pass(struct pass *p)
{
	const struct mdl_geom *g = p->g;
	int hs = g->kv_heads / p->nsh;
	size_t rb = (size_t)g->head_dim * (size_t)g->dtype_bytes, seg = rb * (size_t)hs;

	p->same = true;
	for (int l = 0; l < g->layers; l++)
		for (size_t t = 0; t < p->n; t++)
			for (int k = 0; k < p->nsh; k++) {
				uint8_t *d = p->map ? p->map->seg(p->map->ud, p->value, l, t, k)
				                    : p->scratch;

				if (p->gen || p->verify) {
					uint8_t *w = p->gen ? d : p->scratch;

					for (int h = 0; h < hs; h++)
						mdl_kv_row(g, p->pre[t], l, k * hs + h, p->value,
						           w + (size_t)h * rb);
					if (p->verify && p->same && memcmp(w, d, seg))
						p->same = false;
				}
				if (p->full)
					mdl_h64_update(p->full, d, seg);
				if (p->per)
					mdl_h64_update(&p->per[k], d, seg);
			}
}

static void *pass_main(void *arg)
{
	run_pass(arg);
	return NULL;
}

/* Runs a on this thread and b on a second one (or after a when no thread can be made). */
static void run_two(struct pass *a, struct pass *b)
{
	pthread_t th;
	bool threaded = pthread_create(&th, NULL, pass_main, b) == 0;

	run_pass(a);
	if (threaded)
		pthread_join(th, NULL);
	else
		run_pass(b);
}

static int setup(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh, uint64_t **pre,
                 uint8_t **s1, uint8_t **s2)
{
	size_t seg = (size_t)g->head_dim * (size_t)g->dtype_bytes * (size_t)(g->kv_heads / nsh);

	*pre = malloc(n * sizeof(**pre));
	*s1 = malloc(seg);
	*s2 = malloc(seg);
	if (!*pre || !*s1 || !*s2) {
		free(*pre);
		free(*s1);
		free(*s2);
		return -ENOMEM;
	}
	mdl_kv_prefix(tokens, n, *pre);
	return 0;
}

int sa_kv_gen(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
              const struct sa_kvmap *map, uint64_t *seed, uint64_t *sums)
{
	struct mdl_h64 full, per[SA_MAX_TP];
	uint64_t *pre;
	uint8_t *s1, *s2;
	struct pass k, v;

	if (n == 0 || nsh < 1 || nsh > SA_MAX_TP || g->kv_heads % nsh)
		return -EINVAL;
	if (setup(g, tokens, n, nsh, &pre, &s1, &s2))
		return -ENOMEM;
	mdl_h64_init(&full, MDL_KV_CHECKSUM_SEED);
	for (int i = 0; i < nsh; i++)
		mdl_h64_init(&per[i], MDL_KV_CHECKSUM_SEED);
	k = (struct pass){g,  pre, n, nsh, map, false, true, false, &full, sums ? per : NULL,
	                  s1, true};
	v = k;
	v.value = true;
	v.scratch = s2;
	if (map) {
		/* values are written by a second thread while keys are written and hashed here;
		 * the values' hash needs the keys' result as its seed, so it runs after */
		v.full = v.per = NULL;
		run_two(&k, &v);
		v.gen = false;
	} else {
		run_pass(&k);
	}
	mdl_h64_init(&full, mdl_h64_final(&full));
	for (int i = 0; sums && i < nsh; i++)
		mdl_h64_init(&per[i], mdl_h64_final(&per[i]));
	v.full = &full;
	v.per = sums ? per : NULL;
	run_pass(&v);
	*seed = mdl_h64_final(&full);
	for (int i = 0; sums && i < nsh; i++)
		sums[i] = mdl_h64_final(&per[i]);
	free(pre);
	free(s1);
	free(s2);
	return 0;
}

int sa_kv_scan(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
               const struct sa_kvmap *map, uint64_t *seed, bool *same)
{
	struct mdl_h64 full;
	uint64_t *pre;
	uint8_t *s1, *s2;
	struct pass hk, hv, ck, cv;

	if (n == 0 || nsh < 1 || nsh > SA_MAX_TP || g->kv_heads % nsh || !map)
		return -EINVAL;
	if (setup(g, tokens, n, nsh, &pre, &s1, &s2))
		return -ENOMEM;
	mdl_h64_init(&full, MDL_KV_CHECKSUM_SEED);
	if (!same) { /* hash only */
		hk = (struct pass){g, pre, n, nsh, map, false, false, false, &full, NULL, s1, true};
		run_pass(&hk);
		mdl_h64_init(&full, mdl_h64_final(&full));
		hk.value = true;
		run_pass(&hk);
		*seed = mdl_h64_final(&full);
		goto out;
	}
	/* here: hash keys, hash values, check values; second thread: check keys */
	hk = (struct pass){g, pre, n, nsh, map, false, false, false, &full, NULL, s1, true};
	ck = (struct pass){g, pre, n, nsh, map, false, false, true, NULL, NULL, s2, true};
	hv = hk;
	hv.value = true;
	cv = ck;
	cv.value = true;
	cv.scratch = s1;
	{
		pthread_t th;
		bool threaded = pthread_create(&th, NULL, pass_main, &ck) == 0;

		run_pass(&hk);
		mdl_h64_init(&full, mdl_h64_final(&full));
		run_pass(&hv);
		*seed = mdl_h64_final(&full);
		run_pass(&cv);
		if (threaded)
			pthread_join(th, NULL);
		else
			run_pass(&ck);
	}
	*same = ck.same && cv.same;
out:
	free(pre);
	free(s1);
	free(s2);
	return 0;
}
