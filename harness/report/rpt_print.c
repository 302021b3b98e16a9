/* SPDX-License-Identifier: Apache-2.0 */
/* rpt_print: the three faces of a comparison — a terminal table (benchstat habit: "~" when no
 * significant change), Markdown for a CI job summary, and JSON for machines. */
#include "rpt.h"

#include <math.h>
#include <string.h>

void rpt_fmt_num(char *buf, size_t len, double v)
{
	double a = fabs(v);
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (v == floor(v) && a < 1e15)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 1e4)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 100)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3g", v);
}

/* "1.23 ±4%": the median and the largest distance of a sample from it */
static void fmt_side(char *buf, size_t len, const struct rpt_series *s)
{
	char m[32];
	double lo, hi, med, spread;
	if (!s) {
		snprintf(buf, len, "-");
		return;
	}
	med = pd_stats_median(s->v, s->n);
	rpt_fmt_num(m, sizeof(m), med);
	pd_stats_minmax(s->v, s->n, &lo, &hi);
	spread = med != 0 ? fmax(hi - med, med - lo) / fabs(med) * 100 : 0;
	if (s->n > 1)
		snprintf(buf, len, "%s ±%.0f%%", m, spread);
	else
		snprintf(buf, len, "%s", m);
}

static void fmt_change(char *buf, size_t len, const struct rpt_row *r)
{
	if (!r->o || !r->n)
		snprintf(buf, len, "-");
	else if (r->out == RPT_SAME && !r->o->scalar)
		snprintf(buf, len, "~");
	else if (isnan(r->change_pct))
		snprintf(buf, len, "%s", r->med_n > r->med_o ? "up" : "down");
	else
		snprintf(buf, len, "%+.1f%%", r->change_pct);
}

static void fmt_evidence(char *buf, size_t len, const struct rpt_row *r)
{
	size_t no = r->o ? r->o->n : 0, nn = r->n ? r->n->n : 0;
	if (!isnan(r->p))
		snprintf(buf, len, "p=%.3f n=%zu+%zu", r->p, no, nn);
	else if (r->test && !strcmp(r->test, "count"))
		snprintf(buf, len, "count");
	else
		snprintf(buf, len, "n=%zu+%zu", no, nn);
}

/* beyond the threshold although there are too few samples to tell it from noise */
static bool few_moved(const struct rpt_cmp *c, const struct rpt_row *r)
{
	return r->out == RPT_FEW &&
	       (isnan(r->change_pct) || fabs(r->change_pct) > c->opt.threshold_pct);
}

/* run files list every metric of every scenario: people see the ones that moved, single
 * values (too few samples) only beyond the threshold */
static bool shown(const struct rpt_cmp *c, const struct rpt_row *r)
{
	if (c->a->kind != RPT_RUN)
		return true;
	return r->out == RPT_FEW ? few_moved(c, r) : r->out != RPT_SAME;
}

/* "REGRESSION", "too few samples (n=1+1)", "worse  (not gated: pdkv/socket ...)" */
static void fmt_verdict(char *buf, size_t len, const struct rpt_row *r, bool md)
{
	size_t k;
	if (r->out == RPT_FEW)
		k = (size_t)snprintf(buf, len, "too few samples (n=%zu+%zu)", r->o->n, r->n->n);
	else
		k = (size_t)snprintf(buf, len, "%s",
		                     md && r->out == RPT_REGRESSION ? "**REGRESSION**"
		                                                    : rpt_outcome_name(r->out));
	if (r->why[0] && k < len)
		k += (size_t)snprintf(buf + k, len - k, "%s(%s)", md ? " " : "  ", r->why);
	if (r->note[0] && k < len)
		snprintf(buf + k, len - k, "%s(paired: %s)", md ? " " : "  ", r->note);
}

static const char *label_of(const struct rpt_row *r)
{
	return r->o ? r->o->label : r->n->label;
}

static void footer(FILE *f, const struct rpt_cmp *c, const char *pre)
{
	size_t hidden = 0;
	for (size_t i = 0; i < c->nrows; i++)
		hidden += !shown(c, &c->rows[i]);
	if (hidden)
		fprintf(f, "%s%zu metrics unchanged or single values within %g%% (not listed)\n",
		        pre, hidden, c->opt.threshold_pct);
	if (c->few_moved)
		fprintf(f,
		        "%s%zu moved beyond %g%% with too few samples for a verdict (one value per "
		        "run, or < %d a side): not gated\n",
		        pre, c->few_moved, c->opt.threshold_pct, RPT_MIN_SAMPLES);
	fprintf(f,
	        "%s%zu regression%s beyond %g%% (alpha %g, Holm over %zu gated row%s; the U test "
	        "needs >= %d samples a side), %zu improvement%s",
	        pre, c->regressions, c->regressions == 1 ? "" : "s", c->opt.threshold_pct,
	        c->opt.alpha, c->family, c->family == 1 ? "" : "s", RPT_MIN_SAMPLES,
	        c->improvements, c->improvements == 1 ? "" : "s");
	if (c->a->kind == RPT_RUN)
		fprintf(f, ", %zu verdict%s worse, %zu new NOTRUN", c->worse_verdicts,
		        c->worse_verdicts == 1 ? "" : "s", c->new_notrun);
	fprintf(f, "\n");
	if (c->opt.hist)
		fprintf(
		    f,
		    "%sgate: also beyond the prediction bound of each row over the earlier runs "
		    "in %s, t(1 - alpha/m; n-1) x sd x sqrt(1 + 1/n) of the medians' logs "
		    "(%zu read, the last %d "
		    "count; %zu left out as regressions; %d needed, else not gated)\n",
		    pre, c->opt.hist->dir, c->opt.hist->nruns, RPT_SPREAD_MAX_RUNS,
		    c->opt.hist->left_out, RPT_SPREAD_MIN_RUNS);
}

/* scenario, check, old, new, what, detail of one changed verdict */
static void vd_fields(const struct rpt_vdiff *v, const char *out[6])
{
	const struct rpt_verdict *x = v->n ? v->n : v->o;
	out[0] = x->scenario;
	out[1] = x->check ? x->check : "(scenario)";
	out[2] = v->o ? v->o->status : "-";
	out[3] = v->n ? v->n->status : "-";
	out[4] = v->worse ? "worse" : v->better ? "better" : !v->o ? "new" : "changed";
	out[5] = v->n && v->n->detail[0] ? v->n->detail : v->o ? v->o->detail : "";
}

/* a Markdown table cell: | and newlines would end it */
static void md_cell(FILE *f, const char *s)
{
	fputs("| ", f);
	for (; *s; s++)
		if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s == '\n' ? ' ' : *s, f);
	fputc(' ', f);
}

/* One row's formatted cells, shared by the terminal and Markdown tables. */
struct cells {
	const char *label, *metric;
	char so[48], sn[48], ch[32], ev[48], vd[400];
};

/* false for a row the table leaves out */
static bool row_cells(struct cells *x, const struct rpt_cmp *c, const struct rpt_row *r, bool md)
{
	if (!shown(c, r))
		return false;
	x->label = label_of(r);
	x->metric = (r->o ? r->o : r->n)->metric;
	fmt_side(x->so, sizeof(x->so), r->o);
	fmt_side(x->sn, sizeof(x->sn), r->n);
	fmt_change(x->ch, sizeof(x->ch), r);
	fmt_evidence(x->ev, sizeof(x->ev), r);
	fmt_verdict(x->vd, sizeof(x->vd), r, md);
	return true;
}

void rpt_print_text(FILE *f, const struct rpt_cmp *c)
{
	int w = 24, mw = 6;
	fprintf(f, "old: %s (%s)\nnew: %s (%s)\n", c->a->path, rpt_kind_name(c->a->kind),
	        c->b->path, rpt_kind_name(c->b->kind));
	for (size_t i = 0; i < c->nwarn; i++)
		fprintf(f, "warning: %s\n", c->warn[i]);
	for (size_t i = 0; i < c->nnotes; i++)
		fprintf(f, "note: %s\n", c->notes[i]);
	for (size_t i = 0; i < c->nrows; i++)
		if (shown(c, &c->rows[i]) && (int)strlen(label_of(&c->rows[i])) > w)
			w = (int)strlen(label_of(&c->rows[i]));
	if (w > 60)
		w = 60;
	for (size_t i = 0; i < c->nrows; i++) {
		const struct rpt_row *r = &c->rows[i];
		if (shown(c, r) && (int)strlen((r->o ? r->o : r->n)->metric) > mw)
			mw = (int)strlen((r->o ? r->o : r->n)->metric);
	}
	if (c->nvd) {
		fprintf(f, "\n%-40s %-24s %-6s %-6s %-7s %s\n", "scenario", "check", "old", "new",
		        "", "detail");
		for (size_t i = 0; i < c->nvd; i++) {
			const char *p[6];
			vd_fields(&c->vd[i], p);
			fprintf(f, "%-40s %-24s %-6s %-6s %-7s %.110s\n", p[0], p[1], p[2], p[3],
			        p[4], p[5]);
		}
	}
	fprintf(f, "\n%-*s %-*s %14s %14s %8s %17s  %s\n", w, "row", mw, "metric", "old", "new",
	        "change", "evidence", "verdict");
	for (size_t i = 0; i < c->nrows; i++) {
		struct cells x;
		if (row_cells(&x, c, &c->rows[i], false))
			fprintf(f, "%-*.*s %-*s %14s %14s %8s %17s  %s\n", w, w, x.label, mw,
			        x.metric, x.so, x.sn, x.ch, x.ev, x.vd);
	}
	footer(f, c, "");
}

void rpt_print_markdown(FILE *f, const struct rpt_cmp *c)
{
	fprintf(f, "### pdkv report: `%s` → `%s`\n\n", c->a->path, c->b->path);
	for (size_t i = 0; i < c->nwarn; i++)
		fprintf(f, "> **warning:** %s\n>\n", c->warn[i]);
	for (size_t i = 0; i < c->nnotes; i++)
		fprintf(f, "- %s\n", c->notes[i]);
	if (c->nnotes || c->nwarn)
		fprintf(f, "\n");
	if (c->nvd) {
		fprintf(f,
		        "| scenario | check | old | new | | detail |\n|---|---|---|---|---|---|\n");
		for (size_t i = 0; i < c->nvd; i++) {
			const char *p[6];
			vd_fields(&c->vd[i], p);
			for (int k = 0; k < 6; k++)
				md_cell(f, p[k]);
			fprintf(f, "|\n");
		}
		fprintf(f, "\n");
	}
	fprintf(f, "| row | metric | old | new | change | evidence | verdict |\n"
	           "|---|---|--:|--:|--:|---|---|\n");
	for (size_t i = 0; i < c->nrows; i++) {
		struct cells x;
		if (row_cells(&x, c, &c->rows[i], true))
			fprintf(f, "| %s | %s | %s | %s | %s | %s | %s |\n", x.label, x.metric,
			        x.so, x.sn, x.ch, x.ev, x.vd);
	}
	fprintf(f, "\n");
	footer(f, c, "");
}

static cJSON *side_json(const struct rpt_series *s)
{
	cJSON *o = cJSON_CreateObject();
	double lo, hi;
	pd_stats_minmax(s->v, s->n, &lo, &hi);
	cJSON_AddNumberToObject(o, "n", (double)s->n);
	cJSON_AddNumberToObject(o, "median", pd_stats_median(s->v, s->n));
	cJSON_AddNumberToObject(o, "min", lo);
	cJSON_AddNumberToObject(o, "max", hi);
	cJSON_AddItemToObject(o, "samples", cJSON_CreateDoubleArray(s->v, (int)s->n));
	return o;
}

static void add_num(cJSON *o, const char *k, double v)
{
	if (isnan(v) || isinf(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

static void add_verdict(cJSON *o, const char *k, const struct rpt_verdict *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v->status);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *rpt_cmp_json(const struct rpt_cmp *c)
{
	cJSON *root = cJSON_CreateObject(), *arr, *sum;
	cJSON_AddStringToObject(root, "tool", "pdkv report");
	cJSON_AddStringToObject(root, "old", c->a->path);
	cJSON_AddStringToObject(root, "new", c->b->path);
	cJSON_AddStringToObject(root, "kind", rpt_kind_name(c->a->kind));
	cJSON_AddNumberToObject(root, "threshold_pct", c->opt.threshold_pct);
	cJSON_AddNumberToObject(root, "alpha", c->opt.alpha);
	cJSON_AddNumberToObject(root, "min_samples", RPT_MIN_SAMPLES);
	cJSON_AddNumberToObject(root, "gated_rows", (double)c->family);
	if (c->opt.hist) {
		cJSON *h = cJSON_AddObjectToObject(root, "history");
		cJSON_AddStringToObject(h, "dir", c->opt.hist->dir);
		cJSON_AddNumberToObject(h, "runs", (double)c->opt.hist->nruns);
		cJSON_AddNumberToObject(h, "left_out_regressions", (double)c->opt.hist->left_out);
		cJSON_AddNumberToObject(h, "min_runs", RPT_SPREAD_MIN_RUNS);
		cJSON_AddNumberToObject(h, "max_runs", RPT_SPREAD_MAX_RUNS);
		cJSON_AddStringToObject(
		    h, "rule",
		    "mean - t(1-alpha/m; n-1) * sd * sqrt(1+1/n) of the medians' "
		    "logs (of the medians where one is <= 0)");
	}
	arr = cJSON_AddArrayToObject(root, "warnings");
	for (size_t i = 0; i < c->nwarn; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(c->warn[i]));
	arr = cJSON_AddArrayToObject(root, "notes");
	for (size_t i = 0; i < c->nnotes; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(c->notes[i]));
	arr = cJSON_AddArrayToObject(root, "verdicts");
	for (size_t i = 0; i < c->nvd; i++) {
		const struct rpt_vdiff *v = &c->vd[i];
		const struct rpt_verdict *x = v->n ? v->n : v->o;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "scenario", x->scenario);
		if (x->check)
			cJSON_AddStringToObject(o, "check", x->check);
		else
			cJSON_AddNullToObject(o, "check");
		add_verdict(o, "old", v->o);
		add_verdict(o, "new", v->n);
		cJSON_AddBoolToObject(o, "worse", v->worse);
		cJSON_AddBoolToObject(o, "better", v->better);
		cJSON_AddStringToObject(o, "detail", v->n ? v->n->detail : v->o->detail);
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(root, "rows");
	for (size_t i = 0; i < c->nrows; i++) {
		const struct rpt_row *r = &c->rows[i];
		const struct rpt_series *s = r->o ? r->o : r->n;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", s->key);
		cJSON_AddStringToObject(o, "label", s->label ? s->label : s->key);
		cJSON_AddStringToObject(o, "metric", s->metric);
		cJSON_AddStringToObject(o, "better",
		                        s->better > 0   ? "higher"
		                        : s->better < 0 ? "lower"
		                                        : "none");
		if (r->o)
			cJSON_AddItemToObject(o, "old", side_json(r->o));
		else
			cJSON_AddNullToObject(o, "old");
		if (r->n)
			cJSON_AddItemToObject(o, "new", side_json(r->n));
		else
			cJSON_AddNullToObject(o, "new");
		add_num(o, "change_pct", r->change_pct);
		add_num(o, "p_value", r->p);
		if (r->family)
			add_num(o, "p_gate", r->p_gate);
		add_num(o, "u", r->u);
		if (r->test)
			cJSON_AddStringToObject(o, "test", r->test);
		else
			cJSON_AddNullToObject(o, "test");
		cJSON_AddStringToObject(o, "verdict", rpt_outcome_name(r->out));
		if (r->note[0])
			cJSON_AddStringToObject(o, "paired_despite", r->note);
		if (r->why[0])
			cJSON_AddStringToObject(o, "not_gated", r->why);
		if (r->sprd_set) {
			cJSON *h = cJSON_AddObjectToObject(o, "history");
			cJSON_AddNumberToObject(h, "runs", (double)r->sprd.runs);
			cJSON_AddStringToObject(h, "scale", r->sprd.log ? "log" : "linear");
			add_num(h, "mean", r->sprd.center);
			add_num(h, "spread_pct", r->sprd.sd_pct);
			add_num(h, "k", r->sprd.k);
			add_num(h, "gate_pct", r->sprd.gate_pct);
		}
		cJSON_AddItemToArray(arr, o);
	}
	sum = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(sum, "rows", (double)c->nrows);
	cJSON_AddNumberToObject(sum, "regressions", (double)c->regressions);
	cJSON_AddNumberToObject(sum, "improvements", (double)c->improvements);
	cJSON_AddNumberToObject(sum, "worse_verdicts", (double)c->worse_verdicts);
	cJSON_AddNumberToObject(sum, "new_notrun", (double)c->new_notrun);
	cJSON_AddNumberToObject(sum, "too_few_samples_moved", (double)c->few_moved);
	cJSON_AddNumberToObject(root, "exit", rpt_cmp_status(c));
	return root;
}
