/* SPDX-License-Identifier: Apache-2.0 */
/* rpt_compare: pairs the series and verdicts of two loaded files and decides, per row, whether
 * it changed (Mann-Whitney U on samples, --threshold on single values), plus metadata warnings. */
#include "rpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

const char *rpt_outcome_name(enum rpt_outcome o)
{
	static const char *n[] = {"~",       "better",          "worse",    "REGRESSION",
	                          "changed", "too few samples", "only old", "only new"};
	return (size_t)o < PD_ARRAY_SIZE(n) ? n[o] : "?";
}

static int push_str(char ***v, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int push_str(char ***v, size_t *n, const char *fmt, ...)
{
	char **p = realloc(*v, (*n + 1) * sizeof(*p)), *s;
	va_list ap;
	if (!p)
		return -1;
	*v = p;
	va_start(ap, fmt);
	s = pd_vasprintf(fmt, ap);
	va_end(ap);
	if (!s)
		return -1;
	p[(*n)++] = s;
	return 0;
}

/* metadata expected to differ between two runs being compared: said, not warned about */
static bool expected_to_differ(const char *k)
{
	static const char *keys[] = {"commit", "version", "finished", "started", "git"};
	for (size_t i = 0; i < PD_ARRAY_SIZE(keys); i++)
		if (!strcmp(k, keys[i]))
			return true;
	return !strncmp(k, "versions.", 9);
}

static void meta_diff(struct rpt_cmp *c)
{
	const struct rpt_doc *a = c->a, *b = c->b;
	for (int side = 0; side < 2; side++) {
		const struct rpt_doc *x = side ? b : a, *y = side ? a : b;
		for (size_t i = 0; i < x->nmeta; i++) {
			const char *k = x->meta[i].k, *vx = x->meta[i].v, *vy = rpt_meta_get(y, k);
			const char *vo = side ? vy : vx, *vn = side ? vx : vy;
			if (side && vy)
				continue; /* both sides have it: seen in the first pass */
			if (vy && !strcmp(vx, vy))
				continue;
			if (expected_to_differ(k))
				push_str(&c->notes, &c->nnotes, "%s: %s -> %s", k,
				         vo ? vo : "(unset)", vn ? vn : "(unset)");
			else
				push_str(&c->warn, &c->nwarn, "%s differs: old %s, new %s", k,
				         vo ? vo : "(unset)", vn ? vn : "(unset)");
		}
	}
}

static const struct rpt_verdict *verdict_find(const struct rpt_doc *d, const char *scen,
                                              const char *check)
{
	for (size_t i = 0; i < d->nvd; i++)
		if (!strcmp(d->vd[i].scenario, scen) &&
		    (check ? d->vd[i].check && !strcmp(d->vd[i].check, check) : !d->vd[i].check))
			return &d->vd[i];
	return NULL;
}

/* a scenario that ran (PASS or FAIL) in d: its checks and metrics are expected to be there */
static bool scenario_ran(const struct rpt_doc *d, const char *scen)
{
	const struct rpt_verdict *v = verdict_find(d, scen, NULL);
	return v && strcmp(v->status, "NOTRUN");
}

static int add_vdiff(struct rpt_cmp *c, const struct rpt_verdict *o, const struct rpt_verdict *n)
{
	struct rpt_vdiff *p = realloc(c->vd, (c->nvd + 1) * sizeof(*p));
	if (!p)
		return -1;
	c->vd = p;
	p = &c->vd[c->nvd++];
	p->o = o;
	p->n = n;
	p->worse = n && !n->ok && (o ? o->ok : strcmp(n->status, "NOTRUN") != 0);
	p->better = o && n && !o->ok && n->ok;
	c->worse_verdicts += p->worse;
	if (n && !n->check && !strcmp(n->status, "NOTRUN") && (!o || strcmp(o->status, "NOTRUN")))
		c->new_notrun++;
	return 0;
}

static int verdicts(struct rpt_cmp *c)
{
	const struct rpt_doc *a = c->a, *b = c->b;
	for (size_t i = 0; i < a->nvd; i++) {
		const struct rpt_verdict *o = &a->vd[i],
		                         *n = verdict_find(b, o->scenario, o->check);
		if (n && !strcmp(o->status, n->status))
			continue;
		if (!n && o->check && !scenario_ran(b, o->scenario))
			continue; /* the scenario's own change says it */
		if (add_vdiff(c, o, n))
			return -1;
	}
	for (size_t i = 0; i < b->nvd; i++) {
		const struct rpt_verdict *n = &b->vd[i];
		if (verdict_find(a, n->scenario, n->check))
			continue;
		if (n->check && !scenario_ran(a, n->scenario))
			continue;
		if (add_vdiff(c, NULL, n))
			return -1;
	}
	return 0;
}

/* a row that measures the host, not pdkv: the plain socket, Mooncake, ... of a bench run */
static bool is_baseline(const struct rpt_series *s)
{
	return s->kind && strcmp(s->kind, "pdkv") && strncmp(s->kind, "pdkv/", 5);
}

/* single values (one per run): a count of a steady workload by any change; anything else has
 * no verdict — one sample says nothing about the noise */
static void decide_scalar(struct rpt_cmp *c, struct rpt_row *r, double diff, int dir)
{
	const struct rpt_series *o = r->o, *n = r->n;
	if (o->exact && n->exact) {
		r->test = "count";
		r->out = diff == 0 || isnan(diff) ? RPT_SAME
		         : dir > 0                ? RPT_BETTER
		         : dir < 0                ? RPT_REGRESSION
		                                  : RPT_CHANGED;
		return;
	}
	r->out = diff == 0 ? RPT_SAME : RPT_FEW;
	if (r->out == RPT_FEW &&
	    (isnan(r->change_pct) || fabs(r->change_pct) > c->opt.threshold_pct))
		c->few_moved++;
}

/* --history: a row that would gate does so only when its new median lies, in the bad
 * direction, beyond --threshold and beyond the one-sided prediction bound of the earlier runs'
 * medians for one more run: t(1 - alpha / m; n - 1) * sd * sqrt(1 + 1/n) from their mean (n runs,
 * m gated rows: Bonferroni), both of the medians' logs when all are > 0 (rpt_hist_spread). With
 * too few earlier runs it is reported, not gated. Without --history: yes. */
static bool beyond_spread(struct rpt_cmp *c, struct rpt_row *r)
{
	const struct rpt_hist *h = c->opt.hist;
	struct rpt_spread *sp = &r->sprd;
	double bad_pct, gate, k;
	if (!h)
		return true;
	rpt_hist_spread(h, r->n, sp);
	r->sprd_set = true;
	if (sp->runs < RPT_SPREAD_MIN_RUNS) {
		snprintf(r->why, sizeof(r->why),
		         "not gated: %zu earlier run%s in %s ha%s this row, %d needed to know its "
		         "run-to-run spread",
		         sp->runs, sp->runs == 1 ? "" : "s", h->dir, sp->runs == 1 ? "s" : "ve",
		         RPT_SPREAD_MIN_RUNS);
		return false;
	}
	k = rpt_spread_k(sp->runs, c->opt.alpha, c->family);
	sp->k = k;
	bad_pct = (sp->center - r->med_n) / fabs(sp->center) * 100 * r->o->better;
	gate = rpt_spread_gate_pct(sp, k, r->o->better);
	sp->gate_pct = gate > c->opt.threshold_pct ? gate : c->opt.threshold_pct;
	if (bad_pct > sp->gate_pct)
		return true;
	snprintf(r->why, sizeof(r->why),
	         "not gated: %+.1f%% from the %smean of %zu earlier runs, within %.1f%% (%.2f x "
	         "their run-to-run spread of %.1f%%%s, at least the threshold)",
	         -bad_pct, sp->log ? "geometric " : "", sp->runs, sp->gate_pct, k, sp->sd_pct,
	         sp->log ? " on a log scale" : "");
	return false;
}

/* The verdict of a row with samples from its p-value for the gate (r->p_gate). */
static void judge(struct rpt_cmp *c, struct rpt_row *r)
{
	const struct rpt_series *o = r->o, *n = r->n;
	r->why[0] = '\0';
	if (!(r->p < c->opt.alpha))
		r->out = RPT_SAME;
	else if (!r->dir)
		r->out = RPT_CHANGED;
	else if (r->dir > 0)
		r->out = RPT_BETTER;
	else if (!isnan(r->change_pct) && fabs(r->change_pct) <= c->opt.threshold_pct)
		r->out = RPT_WORSE;
	else if (is_baseline(o)) {
		r->out = RPT_WORSE; /* a slower baseline says the host is busier: said, not gated */
		snprintf(r->why, sizeof(r->why), "a baseline: not gated");
	} else if (o->ratio_row && n->ratio_row) {
		r->out = RPT_WORSE;
		snprintf(r->why, sizeof(r->why), "not gated: %s of the same run decides",
		         o->ratio_row);
	} else if (!(r->p_gate < c->opt.alpha)) {
		r->out = RPT_WORSE;
		snprintf(r->why, sizeof(r->why),
		         "not gated: p=%.3f after Holm's correction over %zu gated rows", r->p_gate,
		         c->family);
	} else
		r->out = beyond_spread(c, r) ? RPT_REGRESSION : RPT_WORSE;
}

/* A row is a REGRESSION only when (a) each side has RPT_MIN_SAMPLES samples, (b) the U test
 * says the change is significant at alpha — after Holm's correction over the rows that can
 * gate, so that two runs of one commit show a REGRESSION anywhere with a chance of at most
 * alpha, however many rows there are — (c) it is in the bad direction beyond the threshold,
 * and (d) it is not a baseline, nor a pdkv row whose ratio to the baseline of the same run is
 * there to decide (noise on a shared host moves pdkv and its baseline together). */
static void decide(struct rpt_cmp *c, struct rpt_row *r)
{
	const struct rpt_series *o = r->o, *n = r->n;
	double diff;

	r->med_o = pd_stats_median(o->v, o->n);
	r->med_n = pd_stats_median(n->v, n->n);
	r->p = r->u = r->p_gate = NAN;
	diff = r->med_n - r->med_o;
	r->change_pct = r->med_o != 0 ? diff / fabs(r->med_o) * 100 : diff == 0 ? 0 : NAN;
	r->dir = diff > 0 ? o->better : diff < 0 ? -o->better : 0;
	if (o->scalar || n->scalar) {
		decide_scalar(c, r, diff, r->dir);
		return;
	}
	if (o->n < RPT_MIN_SAMPLES || n->n < RPT_MIN_SAMPLES) {
		r->out = RPT_FEW;
		return;
	}
	r->p = r->p_gate = pd_stats_mann_whitney(o->v, o->n, n->v, n->n, &r->u, &r->test);
	/* the family of rows that can gate: tested, with a direction, measuring pdkv itself */
	r->family = o->better != RPT_NONE && !is_baseline(o) && !(o->ratio_row && n->ratio_row) &&
	            !isnan(r->p);
	c->family += r->family;
}

static int cmp_p(const void *a, const void *b)
{
	const struct rpt_row *x = *(const struct rpt_row *const *)a,
	                     *y = *(const struct rpt_row *const *)b;
	return x->p < y->p ? -1 : x->p > y->p;
}

/* Holm-Bonferroni: the k-th smallest of m p-values times (m - k + 1), never below the one
 * before it (the adjusted p-values); then every row's verdict and the counts. */
static int holm_and_count(struct rpt_cmp *c)
{
	struct rpt_row **f = calloc(c->family + 1, sizeof(*f));
	size_t m = 0;
	double prev = 0;
	if (!f)
		return -1;
	for (size_t i = 0; i < c->nrows; i++)
		if (c->rows[i].family)
			f[m++] = &c->rows[i];
	qsort(f, m, sizeof(*f), cmp_p);
	for (size_t k = 0; k < m; k++) {
		double adj = f[k]->p * (double)(m - k);
		prev = adj > prev ? adj : prev;
		f[k]->p_gate = prev > 1 ? 1 : prev;
	}
	free(f);
	for (size_t i = 0; i < c->nrows; i++) {
		struct rpt_row *r = &c->rows[i];
		if (!isnan(r->p))
			judge(c, r);
		c->regressions += r->out == RPT_REGRESSION;
		c->improvements += r->out == RPT_BETTER;
	}
	return 0;
}

static int add_row(struct rpt_cmp *c, const struct rpt_series *o, const struct rpt_series *n)
{
	struct rpt_row *p = realloc(c->rows, (c->nrows + 1) * sizeof(*p));
	if (!p)
		return -1;
	c->rows = p;
	p = &c->rows[c->nrows++];
	memset(p, 0, sizeof(*p));
	p->o = o;
	p->n = n;
	p->med_o = o ? pd_stats_median(o->v, o->n) : NAN;
	p->med_n = n ? pd_stats_median(n->v, n->n) : NAN;
	p->change_pct = p->p = p->u = p->p_gate = NAN;
	if (o && n)
		decide(c, p);
	else
		p->out = o ? RPT_ONLY_OLD : RPT_ONLY_NEW;
	return 0;
}

static const struct rpt_series *find_series(const struct rpt_doc *d, const struct rpt_series *s)
{
	for (size_t i = 0; i < d->ns; i++)
		if (!strcmp(d->s[i].key, s->key) && !strcmp(d->s[i].metric, s->metric))
			return &d->s[i];
	return NULL;
}

/* bench rows whose settings differ (1 vs 2 threads): pair kind|op|block when that is unique on
 * both sides, and say what differed */
static const struct rpt_series *find_loose(const struct rpt_doc *d, const struct rpt_series *s,
                                           const struct rpt_doc *other)
{
	const struct rpt_series *hit = NULL;
	size_t mine = 0;
	if (!s->loose)
		return NULL;
	for (size_t i = 0; i < other->ns; i++)
		mine += other->s[i].loose && !strcmp(other->s[i].loose, s->loose) &&
		        !strcmp(other->s[i].metric, s->metric);
	for (size_t i = 0; i < d->ns; i++) {
		const struct rpt_series *x = &d->s[i];
		if (!x->loose || strcmp(x->loose, s->loose) || strcmp(x->metric, s->metric))
			continue;
		if (hit)
			return NULL;
		hit = x;
	}
	return mine == 1 ? hit : NULL;
}

static void loose_note(char *buf, size_t len, const char *go, const char *gn)
{
	static const char *part[] = {"operation", "block",    "batch",
	                             "threads",   "protocol", "memory"};
	char a[200], b[200], *sa = NULL, *sb = NULL, *ta, *tb;
	size_t k = 0, used = 0;
	snprintf(a, sizeof(a), "%s", go);
	snprintf(b, sizeof(b), "%s", gn);
	ta = strtok_r(a, "|", &sa);
	tb = strtok_r(b, "|", &sb);
	buf[0] = '\0';
	for (; ta && tb && k < PD_ARRAY_SIZE(part); k++) {
		if (strcmp(ta, tb) && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s %s -> %s",
			                         used ? ", " : "", part[k], ta, tb);
		ta = strtok_r(NULL, "|", &sa);
		tb = strtok_r(NULL, "|", &sb);
	}
}

/* run series are keyed "scenario|where" */
static const char *scenario_of(const struct rpt_series *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->key);
	buf[strcspn(buf, "|")] = '\0';
	return buf;
}

static int rows(struct rpt_cmp *c)
{
	const struct rpt_doc *a = c->a, *b = c->b;
	bool run = a->kind == RPT_RUN;
	bool *used = calloc(b->ns + 1, sizeof(bool));
	char scen[512];
	if (!used)
		return -1;
	for (size_t i = 0; i < a->ns; i++) {
		const struct rpt_series *o = &a->s[i], *n = find_series(b, o);
		bool loose = false;
		if (!n && (n = find_loose(b, o, a)) && (used[n - b->s] || find_series(a, n)))
			n = NULL;
		else if (n && strcmp(n->key, o->key))
			loose = true;
		if (!n && run && !scenario_ran(b, scenario_of(o, scen, sizeof(scen))))
			continue;
		if (add_row(c, o, n))
			goto oom;
		if (n) {
			used[n - b->s] = true;
			if (loose && n->group && o->group)
				loose_note(c->rows[c->nrows - 1].note,
				           sizeof(c->rows[c->nrows - 1].note), o->group, n->group);
		}
	}
	for (size_t i = 0; i < b->ns; i++) {
		if (used[i])
			continue;
		if (run && !scenario_ran(a, scenario_of(&b->s[i], scen, sizeof(scen))))
			continue;
		if (add_row(c, NULL, &b->s[i]))
			goto oom;
	}
	free(used);
	return 0;
oom:
	free(used);
	return -1;
}

int rpt_compare(const struct rpt_doc *a, const struct rpt_doc *b, const struct rpt_opts *opt,
                struct rpt_cmp *c)
{
	memset(c, 0, sizeof(*c));
	c->a = a;
	c->b = b;
	c->opt = *opt;
	meta_diff(c);
	if (rows(c) || holm_and_count(c) || verdicts(c)) {
		rpt_cmp_free(c);
		return -1;
	}
	return 0;
}

int rpt_cmp_status(const struct rpt_cmp *c)
{
	return c->regressions || c->worse_verdicts ? 1 : 0;
}

void rpt_cmp_free(struct rpt_cmp *c)
{
	for (size_t i = 0; i < c->nwarn; i++)
		free(c->warn[i]);
	for (size_t i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	free(c->warn);
	free(c->notes);
	free(c->rows);
	free(c->vd);
	memset(c, 0, sizeof(*c));
}
