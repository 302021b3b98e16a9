/* SPDX-License-Identifier: Apache-2.0 */
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
	uint8_t **scratch; /* [worker]: one segment, the model's rows to compare (verify only) */
	int nworkers;
	atomic_bool differ;
	struct pd_par par;
};

static void run_part(void *ud, int part, int worker)
{
	struct job *j = ud;
	const struct mdl_geom *g = j->g;
	int hs = g->kv_heads / j->nsh, l = part % g->layers, np = 2 * g->layers;
	bool value = part >= g->layers;
	size_t rb = mdl_kv_row_bytes(g), seg = rb * (size_t)hs;
	uint8_t *scratch = j->scratch[worker];
	struct mdl_ks full, per[SA_MAX_TP];

	mdl_ks_init(&full, mdl_kv_part_seed(part), rb);
	for (int k = 0; j->per && k < j->nsh; k++)
		mdl_ks_init(&per[k], mdl_kv_part_seed(part), rb);
	bool put = j->map && j->map->seg;
	/* a head-major block: the rank's heads of a row hstride apart, each hashed alone */
	size_t hst = j->map && j->map->hstride ? j->map->hstride : rb;

	for (size_t t = j->map && j->map->t0 ? j->map->t0[l] : 0; t < j->n; t++)
		for (int k = 0; k < j->nsh; k++) {
			uint8_t *d = put ? j->map->seg(j->map->ud, value, l, t, k) : NULL;

			if (j->gen) {
				/* the model's rows: written where they go (if anywhere) and summed
				 * from their two words, not read back */
				for (int h = 0; h < hs; h++) {
					uint64_t a, b;

					mdl_kv_row_ab(j->pre[t], l, k * hs + h, value, &a, &b);
					if (put)
						mdl_kv_row_put(g, a, b, d + (size_t)h * hst);
					mdl_ks_affine_row(&full, a, b);
					if (j->per)
						mdl_ks_affine_row(&per[k], a, b);
				}
				continue;
			}
			if (j->verify) {
				bool differ = false;

				for (int h = 0; h < hs; h++)
					mdl_kv_row(g, j->pre[t], l, k * hs + h, value,
					           scratch + (size_t)h * rb);
				if (hst == rb)
					differ = memcmp(scratch, d, seg) != 0;
				for (int h = 0; hst != rb && !differ && h < hs; h++)
					differ = memcmp(scratch + (size_t)h * rb,
					                d + (size_t)h * hst, rb) != 0;
				if (differ &&
				    !atomic_load_explicit(&j->differ, memory_order_relaxed))
					atomic_store(&j->differ, true);
			}
			for (int h = 0; h < (hst == rb ? 1 : hs); h++) {
				size_t len = hst == rb ? seg : rb;

				mdl_ks_update(&full, d + (size_t)h * hst, len);
				if (j->per)
					mdl_ks_update(&per[k], d + (size_t)h * hst, len);
			}
		}
	j->full[part] = mdl_ks_final(&full);
	for (int k = 0; j->per && k < j->nsh; k++)
		j->per[(size_t)k * (size_t)np + (size_t)part] = mdl_ks_final(&per[k]);
}

static void job_free(struct job *j)
{
	for (int i = 0; j->scratch && i <= j->nworkers; i++)
		free(j->scratch[i]);
	free(j->scratch);
	free((void *)j->pre);
	free(j->full);
	free(j->per);
	free(j);
}

/* The job on nworkers started threads (plus the caller of job_finish); NULL: no memory. */
static struct job *job_start(const struct job *tmpl, const int64_t *tokens, int nworkers, bool sums,
                             bool low)
{
	const struct mdl_geom *g = tmpl->g;
	int np = 2 * g->layers;
	size_t seg = mdl_kv_row_bytes(g) * (size_t)(g->kv_heads / tmpl->nsh);
	struct job *j = malloc(sizeof(*j));
	uint64_t *pre;

	if (!j)
		return NULL;
	*j = *tmpl;
	j->nworkers = nworkers < 0 ? 0 : nworkers > PD_PAR_MAX ? PD_PAR_MAX : nworkers;
	pre = malloc(j->n * sizeof(*pre));
	j->pre = pre;
	j->scratch = calloc((size_t)j->nworkers + 1, sizeof(*j->scratch));
	j->full = calloc((size_t)np, sizeof(*j->full));
	j->per = sums ? calloc((size_t)np * (size_t)j->nsh, sizeof(*j->per)) : NULL;
	if (!pre || !j->scratch || !j->full || (sums && !j->per)) {
		job_free(j);
		return NULL;
	}
	for (int i = 0; j->verify && i <= j->nworkers; i++)
		if (!(j->scratch[i] = malloc(seg))) {
			job_free(j);
			return NULL;
		}
	mdl_kv_prefix(tokens, j->n, pre);
	atomic_init(&j->differ, false);
	pd_par_start(&j->par, j->nworkers, np, run_part, j, low);
	return j;
}

/* Takes the parts left on this thread, waits for the rest; *seed and (if sums) sums[k] are
 * the combined part sums; *same (if same) whether every compared row was the model's. */
static void job_finish(struct job *j, uint64_t *seed, uint64_t *sums, bool *same)
{
	int np = 2 * j->g->layers;

	pd_par_finish(&j->par);
	*seed = mdl_kv_combine(j->full, np);
	for (int k = 0; sums && k < j->nsh; k++)
		sums[k] = mdl_kv_combine(j->per + (size_t)k * (size_t)np, np);
	if (same)
		*same = !atomic_load(&j->differ);
	job_free(j);
}

static bool args_ok(const struct mdl_geom *g, size_t n, int nsh)
{
	return n > 0 && nsh >= 1 && nsh <= SA_MAX_TP && g->kv_heads % nsh == 0 && g->layers >= 1;
}

struct sa_kvjob *sa_kv_gen_start(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
                                 const struct sa_kvmap *map, bool low)
{
	struct job t = {.g = g, .n = n, .nsh = nsh, .map = map, .gen = true};

	if (!args_ok(g, n, nsh))
		return NULL;
	return (struct sa_kvjob *)job_start(&t, tokens, pd_par_threads(), false, low);
}

void sa_kv_gen_finish(struct sa_kvjob *job, uint64_t *seed)
{
	job_finish((struct job *)job, seed, NULL, NULL);
}

int sa_kv_gen(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
              const struct sa_kvmap *map, uint64_t *seed, uint64_t *sums)
{
	struct job t = {.g = g, .n = n, .nsh = nsh, .map = map, .gen = true}, *j;
	int th = pd_par_threads();

	if (!args_ok(g, n, nsh))
		return -EINVAL;
	/* rows written into blocks: at least keys and values at once, as before parts existed */
	if (!(j = job_start(&t, tokens, (map && th < 2 ? 2 : th) - 1, sums != NULL, false)))
		return -ENOMEM;
	job_finish(j, seed, sums, NULL);
	return 0;
}

int sa_kv_scan(const struct mdl_geom *g, const int64_t *tokens, size_t n, int nsh,
               const struct sa_kvmap *map, uint64_t *seed, bool *same)
{
	struct job t = {.g = g, .n = n, .nsh = nsh, .map = map, .verify = same != NULL}, *j;
	int th = pd_par_threads();

	if (!args_ok(g, n, nsh) || !map || !map->seg)
		return -EINVAL;
	if (!(j = job_start(&t, tokens, (same && th < 2 ? 2 : th) - 1, false, false)))
		return -ENOMEM;
	job_finish(j, seed, NULL, same);
	return 0;
}
