/* SPDX-License-Identifier: Apache-2.0 */
/* rpt_load: reads `pdkv bench --json`, `pdkv run --json` and generic rows files ({name, metric,
 * samples|value, better}: `pdkv bench serve --json`) into series, verdicts and flat metadata. */
#include "rpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

const char *rpt_kind_name(enum rpt_kind k)
{
	return k == RPT_BENCH ? "bench" : k == RPT_RUN ? "run" : k == RPT_ROWS ? "rows" : "?";
}

static int err_at(char *err, size_t sz, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int err_at(char *err, size_t sz, const char *path, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(err, sz, "%s: ", path);
	va_start(ap, fmt);
	if (k >= 0 && (size_t)k < sz)
		vsnprintf(err + k, sz - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

/* What a JSON value is, for "expected X, got Y" errors. */
static const char *jtype(const cJSON *v)
{
	return !v                  ? "nothing"
	       : cJSON_IsString(v) ? "a string"
	       : cJSON_IsNumber(v) ? "a number"
	       : cJSON_IsBool(v)   ? "true/false"
	       : cJSON_IsNull(v)   ? "null"
	       : cJSON_IsArray(v)  ? "an array"
	       : cJSON_IsObject(v) ? "an object"
	                           : "something else";
}

/* v (named field, optional when opt) is an array (want_array) or an object; else the error. */
static int want_shape(const char *path, const cJSON *v, bool opt, bool want_array, char *err,
                      size_t sz, const char *field, ...) __attribute__((format(printf, 7, 8)));
static int want_shape(const char *path, const cJSON *v, bool opt, bool want_array, char *err,
                      size_t sz, const char *field, ...)
{
	char name[256];
	va_list ap;

	if ((!v && opt) || (want_array ? cJSON_IsArray(v) : cJSON_IsObject(v)))
		return 0;
	va_start(ap, field);
	vsnprintf(name, sizeof(name), field, ap);
	va_end(ap);
	return err_at(err, sz, path, "%s: expected %s, got %s", name,
	              want_array ? "an array" : "an object", jtype(v));
}

static int meta_set(struct rpt_doc *d, const char *k, const char *v)
{
	struct rpt_kv *p;
	for (size_t i = 0; i < d->nmeta; i++)
		if (!strcmp(d->meta[i].k, k))
			return 0; /* the first (the meta object) wins over top-level fallbacks */
	p = realloc(d->meta, (d->nmeta + 1) * sizeof(*p));
	if (!p)
		return -1;
	d->meta = p;
	p[d->nmeta].k = strdup(k);
	p[d->nmeta].v = strdup(v);
	if (!p[d->nmeta].k || !p[d->nmeta].v) {
		free(p[d->nmeta].k);
		free(p[d->nmeta].v);
		return -1;
	}
	d->nmeta++;
	return 0;
}

const char *rpt_meta_get(const struct rpt_doc *d, const char *k)
{
	for (size_t i = 0; i < d->nmeta; i++)
		if (!strcmp(d->meta[i].k, k))
			return d->meta[i].v;
	return NULL;
}

/* scalars as text; objects become "prefix.key"; arrays of scalars a comma list */
static void meta_flatten(struct rpt_doc *d, const cJSON *o, const char *prefix)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		char k[256], v[512] = "";
		if (!it->string)
			continue;
		snprintf(k, sizeof(k), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		if (cJSON_IsObject(it)) {
			meta_flatten(d, it, k);
			continue;
		}
		if (cJSON_IsString(it))
			snprintf(v, sizeof(v), "%s", it->valuestring);
		else if (cJSON_IsNumber(it))
			snprintf(v, sizeof(v), "%.15g", it->valuedouble);
		else if (cJSON_IsBool(it))
			snprintf(v, sizeof(v), "%s", cJSON_IsTrue(it) ? "true" : "false");
		else if (cJSON_IsArray(it)) {
			const cJSON *e;
			size_t len = 0;
			cJSON_ArrayForEach(e, it)
			{
				char one[128];
				if (cJSON_IsString(e))
					snprintf(one, sizeof(one), "%s", e->valuestring);
				else if (cJSON_IsNumber(e))
					snprintf(one, sizeof(one), "%.15g", e->valuedouble);
				else
					continue;
				len +=
				    (size_t)snprintf(v + len, len < sizeof(v) ? sizeof(v) - len : 0,
				                     "%s%s", len ? "," : "", one);
				if (len >= sizeof(v))
					break;
			}
		} else
			continue;
		meta_set(d, k, v);
	}
}

static struct rpt_series *series_get(struct rpt_doc *d, const char *key, const char *metric)
{
	struct rpt_series *p;
	for (size_t i = 0; i < d->ns; i++)
		if (!strcmp(d->s[i].key, key) && !strcmp(d->s[i].metric, metric))
			return &d->s[i];
	p = realloc(d->s, (d->ns + 1) * sizeof(*p));
	if (!p)
		return NULL;
	d->s = p;
	p = &d->s[d->ns];
	memset(p, 0, sizeof(*p));
	p->key = strdup(key);
	p->metric = strdup(metric);
	if (!p->key || !p->metric) {
		free(p->key);
		free(p->metric);
		return NULL;
	}
	d->ns++;
	return p;
}

static int series_add(struct rpt_series *s, double v)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 8;
		double *p = realloc(s->v, nc * sizeof(*p));
		if (!p)
			return -1;
		s->v = p;
		s->cap = nc;
	}
	s->v[s->n++] = v;
	return 0;
}

static void set_str(char **dst, const char *v)
{
	if (!*dst && v)
		*dst = strdup(v);
}

static const char *size_str(double b, char *buf, size_t len)
{
	if (b >= 1048576 && fmod(b, 1048576) == 0)
		snprintf(buf, len, "%.0f MiB", b / 1048576);
	else if (b >= 1024 && fmod(b, 1024) == 0)
		snprintf(buf, len, "%.0f KiB", b / 1024);
	else
		snprintf(buf, len, "%.0f B", b);
	return buf;
}

/* ---------------------------------------------------------------- pdkv bench --json */
static const struct {
	const char *metric, *field;
} bench_metrics[] = {
    {"GB/s", "GBps"},
    {"% line rate", "pct_line_rate"},
    {"x ib_write_bw", "ratio_vs_ib_write_bw"},
};

static double num_or(const cJSON *o, const char *k, double dflt)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

static const char *str_or(const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(x) ? x->valuestring : dflt;
}

/* every metric of row identity key except the ratios themselves: decided by ratio_row */
static void mark_ratio(struct rpt_doc *d, const char *key, const char *ratio_row)
{
	for (size_t i = 0; i < d->ns; i++)
		if (!strcmp(d->s[i].key, key) && strncmp(d->s[i].metric, "x ", 2) &&
		    !d->s[i].ratio_row)
			d->s[i].ratio_row = ratio_row;
}

static int bench_row(struct rpt_doc *d, const cJSON *x, size_t i, const cJSON *root, char *err,
                     size_t sz)
{
	const char *proto = str_or(root, "protocol", "auto"), *kind, *op, *mem;
	const cJSON *samples = cJSON_GetObjectItemCaseSensitive(x, "samples");
	double block, batch, threads;
	char key[256], label[256], loose[160], group[200], sb[32], sch[48] = "";

	kind = str_or(x, "kind", NULL);
	op = str_or(x, "operation", NULL);
	block = num_or(x, "block_size", -1);
	if (!kind)
		return err_at(err, sz, d->path, "rows[%zu].kind: expected \"pdkv\" or \"socket\"",
		              i);
	if (!op)
		return err_at(err, sz, d->path,
		              "rows[%zu].operation: expected \"read\" or \"write\"", i);
	if (!(block > 0))
		return err_at(err, sz, d->path, "rows[%zu].block_size: expected a size in bytes",
		              i);
	batch = num_or(x, "batch_size", num_or(root, "batch_size", 0));
	threads = num_or(x, "threads", num_or(root, "threads", 0));
	mem = str_or(x, "memory", rpt_meta_get(d, "memory") ? rpt_meta_get(d, "memory") : "cpu");
	/* pdkv bench --scheme: each pair count of a sweep is its own series */
	if (str_or(x, "scheme", NULL))
		snprintf(sch, sizeof(sch), " %s x%.0f", str_or(x, "scheme", ""),
		         num_or(x, "pairs", 0));
	snprintf(group, sizeof(group), "%s|%.0f|%.0f|%.0f|%s|%s%s", op, block, batch, threads,
	         proto, mem, sch);
	snprintf(key, sizeof(key), "%s|%s", kind, group);
	snprintf(loose, sizeof(loose), "%s|%s|%.0f%s", kind, op, block, sch);
	snprintf(label, sizeof(label), "%s%s %s %s b%.0f t%.0f %s%s%s", kind, sch, op,
	         size_str(block, sb, sizeof(sb)), batch, threads, proto,
	         strncmp(mem, "cpu", 3) ? " " : "", strncmp(mem, "cpu", 3) ? mem : "");
	for (size_t k = 0; k < PD_ARRAY_SIZE(bench_metrics); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, bench_metrics[k].field);
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(samples, bench_metrics[k].field);
		struct rpt_series *s;
		if (!v && !sv)
			continue;
		if ((v && !cJSON_IsNumber(v)) || (sv && !cJSON_IsArray(sv)))
			return err_at(err, sz, d->path, "rows[%zu].%s%s: expected %s", i,
			              sv ? "samples." : "", bench_metrics[k].field,
			              sv ? "an array of numbers" : "a number");
		s = series_get(d, key, bench_metrics[k].metric);
		if (!s)
			return err_at(err, sz, d->path, "out of memory");
		set_str(&s->label, label);
		set_str(&s->loose, loose);
		set_str(&s->group, group);
		set_str(&s->kind, kind);
		s->better = RPT_HIGHER;
		if (sv) {
			/* every repetition's row carries the samples of all: take them once */
			const cJSON *e;
			if (s->n)
				continue;
			cJSON_ArrayForEach(e, sv)
			{
				if (!cJSON_IsNumber(e))
					return err_at(err, sz, d->path,
					              "rows[%zu].samples.%s: expected numbers only",
					              i, bench_metrics[k].field);
				if (series_add(s, e->valuedouble))
					return err_at(err, sz, d->path, "out of memory");
			}
		} else if (series_add(s, v->valuedouble))
			return err_at(err, sz, d->path, "out of memory");
	}
	/* measured beside ib_write_bw in this run: that ratio decides for the row's raw figures */
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "ratio_vs_ib_write_bw")))
		mark_ratio(d, key, "x ib_write_bw");
	return 0;
}

/* pdkv / socket per repetition: the two run interleaved (socket, pdkv, socket, pdkv, ...), so
 * the ratio of a pair cancels what other tenants of the host did meanwhile — the steadiest
 * figure on a shared machine. Only when both sides have every repetition. */
static int bench_ratios(struct rpt_doc *d)
{
	size_t ns = d->ns;
	for (size_t i = 0; i < ns; i++) {
		struct rpt_series *p = &d->s[i], *q = NULL, *r;
		char key[256], label[256], loose[160], *group, *what;
		if (strcmp(p->kind, "pdkv") || strcmp(p->metric, "GB/s"))
			continue;
		for (size_t j = 0; j < ns; j++)
			if (!strcmp(d->s[j].kind, "socket") && !strcmp(d->s[j].metric, "GB/s") &&
			    !strcmp(d->s[j].group, p->group))
				q = &d->s[j];
		if (!q || q->n != p->n || !p->n)
			continue;
		for (size_t k = 0; k < q->n && q; k++)
			if (!(q->v[k] > 0))
				q = NULL; /* a socket repetition that moved nothing: no ratio */
		if (!q)
			continue;
		snprintf(key, sizeof(key), "pdkv/socket|%s", p->group);
		snprintf(loose, sizeof(loose), "pdkv/socket%s", strchr(p->loose, '|'));
		what = strchr(p->label, ' ');
		snprintf(label, sizeof(label), "pdkv/socket%s", what ? what : "");
		group = strdup(p->group);
		r = series_get(d, key, "x socket"); /* may move d->s: p and q are stale after it */
		if (!r || !group) {
			free(group);
			return -1;
		}
		p = &d->s[i];
		for (size_t j = 0; j < ns; j++)
			if (!strcmp(d->s[j].kind, "socket") && !strcmp(d->s[j].metric, "GB/s") &&
			    !strcmp(d->s[j].group, group))
				q = &d->s[j];
		set_str(&r->label, label);
		set_str(&r->loose, loose);
		r->group = group;
		set_str(&r->kind, "pdkv/socket");
		r->better = RPT_HIGHER;
		for (size_t k = 0; k < p->n; k++)
			if (series_add(r, p->v[k] / q->v[k]))
				return -1;
		snprintf(key, sizeof(key), "%s", p->key);
		mark_ratio(d, key, "pdkv/socket");
	}
	return 0;
}

static int load_bench(struct rpt_doc *d, const cJSON *root, char *err, size_t sz)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows"), *x;
	static const char *top[] = {"protocol",    "batch_size", "threads",
	                            "report_unit", "check",      "line_rate_gbps"};
	size_t i = 0;

	d->kind = RPT_BENCH;
	if (want_shape(d->path, rows, false, true, err, sz, "rows") ||
	    want_shape(d->path, cJSON_GetObjectItemCaseSensitive(root, "meta"), true, false, err,
	               sz, "meta"))
		return -1;
	meta_flatten(d, cJSON_GetObjectItemCaseSensitive(root, "meta"), "");
	for (size_t k = 0; k < PD_ARRAY_SIZE(top); k++) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, top[k]);
		char v[64];
		if (cJSON_IsString(t))
			meta_set(d, top[k], t->valuestring);
		else if (cJSON_IsNumber(t)) {
			snprintf(v, sizeof(v), "%.15g", t->valuedouble);
			meta_set(d, top[k], v);
		} else if (cJSON_IsBool(t))
			meta_set(d, top[k], cJSON_IsTrue(t) ? "true" : "false");
	}
	cJSON_ArrayForEach(x, rows)
	{
		if (!cJSON_IsObject(x))
			return err_at(err, sz, d->path, "rows[%zu]: expected an object", i);
		if (bench_row(d, x, i, root, err, sz))
			return -1;
		i++;
	}
	if (bench_ratios(d))
		return err_at(err, sz, d->path, "out of memory");
	return 0;
}

/* ---------------------------------------------------------------- pdkv run --json */
static bool has(const char *s, const char *w)
{
	return strstr(s, w) != NULL;
}

/* direction of a run metric by its name: counters of KV reuse are good, failures bad */
static int run_direction(const char *name, bool *exact)
{
	*exact = !has(name, "seconds") && !has(name, "latency") && !has(name, "ttft") &&
	         !has(name, "tpot") && !has(name, "itl") && !has(name, "goodput") &&
	         !has(name, "_s_") && !(strlen(name) > 2 && !strcmp(name + strlen(name) - 2, "_s"));
	if (has(name, "latency") || has(name, "ttft") || has(name, "tpot") || has(name, "itl") ||
	    has(name, "seconds"))
		return has(name, "_count") ? RPT_NONE : RPT_LOWER;
	if (has(name, "fail") || has(name, "error") || has(name, "recomputed") ||
	    has(name, "miss") || has(name, "local_compute"))
		return RPT_LOWER;
	if (has(name, "reused") || has(name, "hits") || has(name, "bytes_received") ||
	    has(name, "external_kv_transfer") || has(name, "goodput") || !strcmp(name, "ok"))
		return RPT_HIGHER;
	return RPT_NONE;
}

/* A histogram's buckets, summed over their le labels by the runner: a cumulative count that
 * grows when requests get faster (more of them fall under the low bounds) — no scalar to
 * compare. The _sum and _count beside them are kept. */
static bool is_bucket(const char *name)
{
	size_t n = strlen(name);
	return n > 7 && !strcmp(name + n - 7, "_bucket");
}

/* steady: the scenario passed, expects no failure and every request succeeded, so its workload
 * ran as written and its counts (tokens reused, bytes, ...) are deterministic; with a fault or a
 * failed request they follow the timing of the fault, and are single samples like a latency */
static int run_metric(struct rpt_doc *d, const char *scen, const char *where, const cJSON *x,
                      bool steady)
{
	char key[512], label[512];
	struct rpt_series *s;
	bool exact;
	if (!cJSON_IsNumber(x) || !x->string || is_bucket(x->string))
		return 0;
	snprintf(key, sizeof(key), "%s|%s", scen, where);
	snprintf(label, sizeof(label), "%s %s", scen, where);
	s = series_get(d, key, x->string);
	if (!s)
		return -1;
	set_str(&s->label, label);
	s->better = run_direction(x->string, &exact);
	s->exact = exact && steady;
	s->scalar = true;
	s->n = 0; /* a scenario listed twice: the last one counts */
	return series_add(s, x->valuedouble);
}

static int add_verdict(struct rpt_doc *d, const char *scen, const char *check, const char *status,
                       bool ok, const char *detail)
{
	struct rpt_verdict *p = realloc(d->vd, (d->nvd + 1) * sizeof(*p));
	if (!p)
		return -1;
	d->vd = p;
	p = &d->vd[d->nvd++];
	p->scenario = strdup(scen);
	p->check = check ? strdup(check) : NULL;
	p->status = strdup(status);
	p->ok = ok;
	p->detail = strdup(detail ? detail : "");
	return 0;
}

static int load_run(struct rpt_doc *d, const cJSON *root, char *err, size_t sz)
{
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "scenarios"), *x, *m;
	size_t i = 0;

	d->kind = RPT_RUN;
	meta_flatten(d, cJSON_GetObjectItemCaseSensitive(root, "host"), "");
	meta_set(d, "version", str_or(root, "version", "?"));
	meta_set(d, "finished", str_or(root, "finished", "?"));
	meta_flatten(d, cJSON_GetObjectItemCaseSensitive(root, "versions"), "versions");
	cJSON_ArrayForEach(x, sc)
	{
		const char *name = str_or(x, "name", NULL), *st = str_or(x, "status", NULL);
		const cJSON *cks = cJSON_GetObjectItemCaseSensitive(x, "checks"), *c, *q, *rq;
		size_t j = 0;
		bool steady;
		if (!name)
			return err_at(err, sz, d->path, "scenarios[%zu].name: expected a string",
			              i);
		if (!st || (strcmp(st, "PASS") && strcmp(st, "FAIL") && strcmp(st, "NOTRUN")))
			return err_at(err, sz, d->path,
			              "scenarios[%zu].status: expected PASS, FAIL or NOTRUN", i);
		if (want_shape(d->path, cks, true, true, err, sz, "scenarios[%zu].checks", i) ||
		    want_shape(d->path, cJSON_GetObjectItemCaseSensitive(x, "requests"), true,
		               false, err, sz, "scenarios[%zu].requests", i) ||
		    want_shape(d->path, cJSON_GetObjectItemCaseSensitive(x, "metrics"), true, false,
		               err, sz, "scenarios[%zu].metrics", i))
			return -1;
		if (add_verdict(d, name, NULL, st, !strcmp(st, "PASS"), str_or(x, "reason", "")))
			return err_at(err, sz, d->path, "out of memory");
		cJSON_ArrayForEach(c, cks)
		{
			const char *cn = str_or(c, "name", NULL), *res = str_or(c, "result", NULL);
			bool xf =
			    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "expected_to_fail"));
			if (!cn || !res)
				return err_at(err, sz, d->path,
				              "scenarios[%zu].checks[%zu]: expected \"name\" and "
				              "\"result\" strings",
				              i, j);
			if (add_verdict(d, name, cn, res, !strcmp(res, "PASS") != xf,
			                str_or(c, "detail", "")))
				return err_at(err, sz, d->path, "out of memory");
			j++;
		}
		rq = cJSON_GetObjectItemCaseSensitive(x, "requests");
		steady = !strcmp(st, "PASS") && !str_or(x, "expect_fail", NULL) &&
		         (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(rq, "total")) ||
		          num_or(rq, "ok", -1) == num_or(rq, "total", -1));
		cJSON_ArrayForEach(q, rq)
		{
			if (run_metric(d, name, "requests", q, steady))
				return err_at(err, sz, d->path, "out of memory");
		}
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(x, "metrics"))
		{
			cJSON_ArrayForEach(q, m)
			{
				if (m->string && run_metric(d, name, m->string, q, steady))
					return err_at(err, sz, d->path, "out of memory");
			}
		}
		i++;
	}
	return 0;
}

/* ---------------------------------------------------------------- generic rows */
static int load_rows(struct rpt_doc *d, const cJSON *root, char *err, size_t sz)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows"), *x;
	size_t i = 0;

	d->kind = RPT_ROWS;
	if (want_shape(d->path, cJSON_GetObjectItemCaseSensitive(root, "meta"), true, false, err,
	               sz, "meta"))
		return -1;
	meta_flatten(d, cJSON_GetObjectItemCaseSensitive(root, "meta"), "");
	cJSON_ArrayForEach(x, rows)
	{
		const char *name = str_or(x, "name", NULL), *metric = str_or(x, "metric", NULL);
		const char *better = str_or(x, "better", "none"), *unit = str_or(x, "unit", NULL);
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(x, "samples");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, "value"), *e;
		struct rpt_series *s;
		char m[256];
		if (!name || !metric)
			return err_at(err, sz, d->path,
			              "rows[%zu]: expected \"name\" and \"metric\" "
			              "strings",
			              i);
		if (strcmp(better, "higher") && strcmp(better, "lower") && strcmp(better, "none"))
			return err_at(
			    err, sz, d->path,
			    "rows[%zu].better: expected \"higher\", \"lower\" or \"none\", got "
			    "\"%s\"",
			    i, better);
		if (!cJSON_IsArray(sv) && !cJSON_IsNumber(v))
			return err_at(err, sz, d->path,
			              "rows[%zu]: expected \"samples\" (an array of numbers) or "
			              "\"value\" (a number)",
			              i);
		snprintf(m, sizeof(m), "%s%s%s%s", metric, unit ? " (" : "", unit ? unit : "",
		         unit ? ")" : "");
		s = series_get(d, name, m);
		if (!s)
			return err_at(err, sz, d->path, "out of memory");
		set_str(&s->label, name);
		s->better = !strcmp(better, "higher")  ? RPT_HIGHER
		            : !strcmp(better, "lower") ? RPT_LOWER
		                                       : RPT_NONE;
		s->scalar = !cJSON_IsArray(sv);
		s->n = 0;
		if (s->scalar) {
			if (series_add(s, v->valuedouble))
				return err_at(err, sz, d->path, "out of memory");
		} else {
			size_t k = 0;
			cJSON_ArrayForEach(e, sv)
			{
				if (!cJSON_IsNumber(e))
					return err_at(err, sz, d->path,
					              "rows[%zu].samples[%zu]: expected a number",
					              i, k);
				if (series_add(s, e->valuedouble))
					return err_at(err, sz, d->path, "out of memory");
				k++;
			}
		}
		i++;
	}
	return 0;
}

int rpt_parse(const char *path, const char *text, struct rpt_doc *d, char *err, size_t sz)
{
	cJSON *root = cJSON_Parse(text), *rows, *first;
	const char *tool;
	int rc;

	memset(d, 0, sizeof(*d));
	d->path = strdup(path);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		return err_at(err, sz, path, "not valid JSON (near byte %ld)",
		              at && at >= text ? (long)(at - text) : -1L);
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return err_at(err, sz, path, "expected a JSON object at the top");
	}
	tool = str_or(root, "tool", "");
	if (!strcmp(tool, "pdkv report")) {
		cJSON_Delete(root);
		err_at(err, sz, path, "a `pdkv report` output, not a run: compare its inputs");
		return -2;
	}
	rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
	first = cJSON_IsArray(rows) ? cJSON_GetArrayItem(rows, 0) : NULL;
	if (!strcmp(tool, "pdkv run") ||
	    cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "scenarios")))
		rc = want_shape(path, cJSON_GetObjectItemCaseSensitive(root, "scenarios"), false,
		                true, err, sz, "scenarios")
		         ?: load_run(d, root, err, sz);
	else if (!strcmp(tool, "pdkv-bench") ||
	         (first && cJSON_GetObjectItemCaseSensitive(first, "operation")))
		rc = load_bench(d, root, err, sz);
	else if (cJSON_IsArray(rows))
		rc = load_rows(d, root, err, sz);
	else
		rc =
		    err_at(err, sz, path,
		           "not a pdkv JSON file: expected \"rows\" (pdkv bench, or {name, metric, "
		           "samples|value, better} rows) or \"scenarios\" (pdkv run)");
	cJSON_Delete(root);
	return rc;
}

int rpt_load(const char *path, struct rpt_doc *d, char *err, size_t sz)
{
	char *text = NULL;
	int rc = pd_read_file(path, 64u << 20, &text, NULL);
	if (rc) {
		memset(d, 0, sizeof(*d));
		return err_at(err, sz, path, "cannot read: %s", strerror(-rc));
	}
	rc = rpt_parse(path, text, d, err, sz);
	free(text);
	return rc;
}

void rpt_doc_free(struct rpt_doc *d)
{
	for (size_t i = 0; i < d->nmeta; i++) {
		free(d->meta[i].k);
		free(d->meta[i].v);
	}
	for (size_t i = 0; i < d->ns; i++) {
		struct rpt_series *s = &d->s[i];
		free(s->key);
		free(s->label);
		free(s->metric);
		free(s->loose);
		free(s->group);
		free(s->kind);
		free(s->v);
	}
	for (size_t i = 0; i < d->nvd; i++) {
		free(d->vd[i].scenario);
		free(d->vd[i].check);
		free(d->vd[i].status);
		free(d->vd[i].detail);
	}
	free(d->meta);
	free(d->s);
	free(d->vd);
	free(d->path);
	memset(d, 0, sizeof(*d));
}
