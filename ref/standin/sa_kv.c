/* sa_kv: the fake model's KV generated straight into where a connector keeps it (V1 blocks, V0
 * tensors) and hashed as it goes, and the received KV hashed and checked in place — no whole-KV
 * scratch copies, each layer's keys and values a part of its own on a few threads. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pd_par.h"
#include "sa.h"

/* One job over the KV's 2 x layers parts (mdl_kv_checksum's), each part on whichever of a few
 * threads takes it (pd_par): its rows written (gen) or compared (verify) and hashed. */
struct job {
	const struct mdl_geom *g;
	const uint64_t *pre;
	size_t n;
	int nsh;
	const struct sa_kvmap *map;
	bool gen;          /* write the fake model's rows */
	bool verify;       /* compare with the fake model's rows */
	uint64_t *full;    /* [2L] part sums of the whole KV */
	uint64_t *per;     /* [nsh][2L] part sums of each rank's shard (NULL = none) */
	uint8_t **scratch; /* [worker]: one segment */
	atomic_bool differ;
};

static void run_part(void *ud, int part, int worker)
{
	struct job *j = ud;
	const struct mdl_geom *g = j->g;
	int hs = g->kv_heads / j->nsh, l = part % g->layers, np = 2 * g->layers;
	bool value = part >= g->layers;
	size_t rb = (size_t)g->head_dim * (size_t)g->dtype_bytes, seg = rb * (size_t)hs;
	uint8_t *scratch = j->scratch[worker];
	struct mdl_h64 full, per[SA_MAX_TP];

	mdl_h64_init(&full, mdl_kv_part_seed(part));
	for (int k = 0; j->per && k < j->nsh; k++)
		mdl_h64_init(&per[k], mdl_kv_part_seed(part));
	for (size_t t = 0; t < j->n; t++)
		for (int k = 0; k < j->nsh; k++) {
			uint8_t *d = j->map ? j->map->seg(j->map->ud, value, l, t, k) : scratch;

			if (j->gen || j->verify) {
				uint8_t *w = j->gen ? d : scratch;

				for (int h = 0; h < hs; h++)
					mdl_kv_row(g, j->pre[t], l, k * hs + h, value,
					           w + (size_t)h * rb);
				if (j->verify &&
				    !atomic_load_explicit(&j->differ, memory_order_relaxed) &&
				    memcmp(w, d, seg))
					atomic_store(&j->differ, true);
			}
			mdl_h64_update(&full, d, seg);
			if (j->per)
				mdl_h64_update(&per[k], d, seg);
		}
	j->full[part] = mdl_h64_final(&full);
	for (int k = 0; j->per && k < j->nsh; k++)
		j->per[(size_t)k * (size_t)np + (size_t)part] = mdl_h64_final(&per[k]);
}

/* Runs the job on nthreads; *seed and (if sums) sums[k] are the combined part sums. */
static int run_job(struct job *j, const int64_t *tokens, int nthreads, uint64_t *seed,
                   uint64_t *sums)
{
	const struct mdl_geom *g = j->g;
	int np = 2 * g->layers, ret = -ENOMEM;
	size_t seg = (size_t)g->head_dim * (size_t)g->dtype_bytes * (size_t)(g->kv_heads / j->nsh);
	uint64_t *pre = malloc(j->n * sizeof(*pre));
	uint8_t **scr = calloc((size_t)nthreads, sizeof(*scr));

	j->full = calloc((size_t)np, sizeof(*j->full));
	j->per = sums ? calloc((size_t)np * (size_t)j->nsh, sizeof(*j->per)) : NULL;
	if (!pre || !scr || !j->full || (sums && !j->per))
		goto out;
	for (int i = 0; i < nthreads; i++)
		if (!(scr[i] = malloc(seg)))
			goto out;
	mdl_kv_prefix(tokens, j->n, pre);
	j->pre = pre;
	j->scratch = scr;
	atomic_init(&j->differ, false);
	pd_par_run(nthreads, np, run_part, j);
	*seed = mdl_kv_combine(j->full, np);
	for (int k = 0; sums && k < j->nsh; k++)
		sums[k] = mdl_kv_combine(j->per + (size_t)k * (size_t)np, np);
	ret = 0;
out:
	for (int i = 0; scr && i < nthreads; i++)
		free(scr[i]);
	free(scr);
	free(pre);
	free(j->full);
	free(j->per);
	return ret;
}

int sa_kv_gen(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
              const struct sa_kvmap *map, uint64_t *seed, uint64_t *sums)
{
	struct job j = {.g = g, .n = n, .nsh = nsh, .map = map, .gen = true};
	int th = pd_par_threads();

	if (n == 0 || nsh < 1 || nsh > SA_MAX_TP || g->kv_heads % nsh || g->layers < 1)
		return -EINVAL;
	/* rows written into blocks: at least keys and values at once, as before parts existed */
	return run_job(&j, tokens, map && th < 2 ? 2 : th, seed, sums);
}

int sa_kv_scan(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
               const struct sa_kvmap *map, uint64_t *seed, bool *same)
{
	struct job j = {.g = g, .n = n, .nsh = nsh, .map = map, .verify = same != NULL};
	int th = pd_par_threads(), ret;

	if (n == 0 || nsh < 1 || nsh > SA_MAX_TP || g->kv_heads % nsh || g->layers < 1 || !map)
		return -EINVAL;
	ret = run_job(&j, tokens, same && th < 2 ? 2 : th, seed, NULL);
	if (!ret && same)
		*same = !atomic_load(&j.differ);
	return ret;
}
