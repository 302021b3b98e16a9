/* SPDX-License-Identifier: Apache-2.0 */
/* rpt_spread: how much a row's median moves from one run to the next on this host, learnt from
 * the earlier runs kept in a history directory (`pdkv report compare --history DIR`). */
#include "rpt.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pd_util.h"

/* run/compare.json (written by ci/bench.sh beside the run) counted a regression */
static bool run_regressed(const char *rundir)
{
	char *path = pd_asprintf("%s/compare.json", rundir), *text = NULL;
	size_t len;
	bool yes = false;
	if (path && !pd_read_file(path, 1 << 24, &text, &len)) {
		cJSON *j = cJSON_Parse(text);
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(j, "summary"), "regressions");
		yes = cJSON_IsNumber(r) && r->valuedouble > 0;
		cJSON_Delete(j);
	}
	free(text);
	free(path);
	return yes;
}

static int add_doc(struct rpt_hist *h, const char *path, enum rpt_kind kind, size_t run)
{
	char err[512];
	struct rpt_doc d;
	struct rpt_doc *p;
	size_t *q;
	if (rpt_load(path, &d, err, sizeof(err)) || d.kind != kind) {
		rpt_doc_free(&d); /* a comparison, another kind or a bad file: not a sample */
		return 0;
	}
	p = realloc(h->docs, (h->n + 1) * sizeof(*p));
	if (p)
		h->docs = p;
	q = p ? realloc(h->run, (h->n + 1) * sizeof(*q)) : NULL;
	if (!q) {
		rpt_doc_free(&d);
		return -1;
	}
	h->run = q;
	h->docs[h->n] = d;
	h->run[h->n++] = run;
	return 0;
}

/* one run: a directory of *.json (the history layout) or a *.json file */
static int add_run(struct rpt_hist *h, const char *path, bool is_dir, enum rpt_kind kind,
                   const char *skip)
{
	size_t before = h->n, nj;
	char **js;
	char real[PATH_MAX];
	if (!is_dir) {
		if (realpath(path, real) && skip && !strcmp(real, skip))
			return 0;
		if (add_doc(h, path, kind, h->nruns))
			return -1;
	} else {
		if (run_regressed(path)) {
			h->left_out++;
			return 0;
		}
		js = rpt_list_dir(path, ".json", &nj);
		for (size_t k = 0; k < nj; k++) {
			char *jp = pd_asprintf("%s/%s", path, js[k]);
			int rc = !jp || ((!realpath(jp, real) || !skip || strcmp(real, skip)) &&
			                 add_doc(h, jp, kind, h->nruns));
			free(jp);
			if (rc) {
				rpt_free_list(js, nj);
				return -1;
			}
		}
		rpt_free_list(js, nj);
	}
	h->nruns += h->n > before;
	return 0;
}

/* the run of dir that new_path is kept in ("DIR/<run>/bench.json" -> "<run>"), else NULL */
static char *run_of(const char *dir_real, const char *new_real)
{
	size_t l = strlen(dir_real);
	const char *rest, *slash;
	if (strncmp(new_real, dir_real, l) || new_real[l] != '/')
		return NULL;
	rest = new_real + l + 1;
	slash = strchr(rest, '/');
	return slash && !strchr(slash + 1, '/') ? strndup(rest, (size_t)(slash - rest)) : NULL;
}

int rpt_hist_load(const char *dir, const char *new_path, enum rpt_kind kind, struct rpt_hist *h,
                  char *err, size_t errsz)
{
	char dreal[PATH_MAX], nreal[PATH_MAX], *cut = NULL, **names;
	size_t n, first = 0;
	struct stat st;
	int rc = 0;

	memset(h, 0, sizeof(*h));
	nreal[0] = '\0';
	if (!realpath(dir, dreal) || stat(dreal, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz,
		         "--history %s: not a directory (want the directory of earlier runs, "
		         "as ci/bench.sh keeps them: DIR/<UTC time>-<commit>/bench.json)",
		         dir);
		return -1;
	}
	h->dir = strdup(dir);
	if (realpath(new_path, nreal))
		cut = run_of(dreal, nreal);
	names = rpt_list_dir(dreal, NULL, &n);
	/* the last RPT_SPREAD_MAX_RUNS runs before new_path's; a few more are read, in case some
	 * are left out or hold other kinds */
	if (cut)
		while (n && strcmp(names[n - 1], cut) >= 0)
			free(names[--n]);
	if (n > 3 * RPT_SPREAD_MAX_RUNS)
		first = n - 3 * RPT_SPREAD_MAX_RUNS;
	for (size_t i = first; i < n && !rc && h->dir; i++) {
		char *path = pd_asprintf("%s/%s", dreal, names[i]);
		size_t l = strlen(names[i]);
		if (!path) {
			rc = -1;
			break;
		}
		if (!stat(path, &st) && S_ISDIR(st.st_mode))
			rc = add_run(h, path, true, kind, nreal[0] ? nreal : NULL);
		else if (l > 5 && !strcmp(names[i] + l - 5, ".json"))
			rc = add_run(h, path, false, kind, nreal[0] ? nreal : NULL);
		free(path);
	}
	rpt_free_list(names, n);
	free(cut);
	if (rc || !h->dir) {
		snprintf(err, errsz, "--history %s: out of memory", dir);
		rpt_hist_free(h);
		return -1;
	}
	return 0;
}

void rpt_hist_free(struct rpt_hist *h)
{
	for (size_t i = 0; i < h->n; i++)
		rpt_doc_free(&h->docs[i]);
	free(h->docs);
	free(h->run);
	free(h->dir);
	memset(h, 0, sizeof(*h));
}

void rpt_hist_spread(const struct rpt_hist *h, const struct rpt_series *s, struct rpt_spread *sp)
{
	double med[RPT_SPREAD_MAX_RUNS];
	size_t m = 0, last_run = (size_t)-1;

	memset(sp, 0, sizeof(*sp));
	sp->center = sp->sd_pct = sp->k = sp->gate_pct = NAN;
	/* newest first, one median per run, the last RPT_SPREAD_MAX_RUNS runs with the row */
	for (size_t i = h->n; i-- > 0 && m < RPT_SPREAD_MAX_RUNS;) {
		const struct rpt_doc *d = &h->docs[i];
		if (h->run[i] == last_run)
			continue;
		for (size_t k = 0; k < d->ns; k++) {
			const struct rpt_series *x = &d->s[k];
			if (x->n && !strcmp(x->key, s->key) && !strcmp(x->metric, s->metric)) {
				med[m++] = pd_stats_median(x->v, x->n);
				last_run = h->run[i];
				break;
			}
		}
	}
	sp->runs = m;
	if (!m)
		return;
	/* a figure's run-to-run noise multiplies it (a busier host makes a run slower by some
	 * fraction): judged on the log of the medians, a bound in the slower direction stays
	 * above zero however wide the spread, so a collapse is never inside it */
	sp->log = true;
	for (size_t i = 0; i < m; i++)
		sp->log = sp->log && med[i] > 0 && isfinite(med[i]);
	if (sp->log) {
		for (size_t i = 0; i < m; i++)
			med[i] = log(med[i]);
		sp->center = exp(pd_stats_mean(med, m));
		sp->sd_pct = m > 1 ? pd_stats_stdev(med, m) * 100 : NAN;
		return;
	}
	sp->center = pd_stats_mean(med, m);
	sp->sd_pct =
	    m > 1 && sp->center != 0 ? pd_stats_stdev(med, m) / fabs(sp->center) * 100 : NAN;
}

double rpt_spread_gate_pct(const struct rpt_spread *sp, double k, int better)
{
	double g;
	if (isnan(sp->sd_pct) || isnan(k))
		return 0;
	g = k * sp->sd_pct / 100;
	if (!sp->log)
		return g * 100;
	return (better > 0 ? 1 - exp(-g) : exp(g) - 1) * 100;
}

double rpt_spread_k(size_t n, double alpha, size_t m)
{
	if (n < 2)
		return NAN;
	return pd_stats_t_quantile(1 - alpha / (double)(m ? m : 1), (double)(n - 1)) *
	       sqrt(1 + 1 / (double)n);
}
