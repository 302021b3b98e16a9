/* SPDX-License-Identifier: Apache-2.0 */
/* hr_external: `pdkv run --external` — a scenario's workload through someone else's deployment
 * (real vLLM prefill / decode / router): nothing is started, kv_reused reads vLLM's own signals. */
#include "cfg/cfg_drift.h"
#include "hr.h"
#include "pd_buf.h"
#include "pd_util.h"
#include "cfg/cfg_vllm.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define EXT_TIMEOUT_S 300.0

static char *get_text(const char *base, const char *path)
{
	char url[600];
	struct pd_buf b = {.max = 64 << 20};
	snprintf(url, sizeof(url), "%s%s", base, path);
	if (hr_http_get(url, 5000, &b) != 200) {
		free(b.p);
		b.p = NULL;
	}
	return b.p; /* NUL-terminated */
}

char *hr_metrics_text(const char *url)
{
	return get_text(url, "");
}

/* Sum of the samples of name whose labels contain label (e.g. source="local_compute"); NAN when
 * there is none. hr_metrics sums over labels, which would mix the sources. */
static double label_sum(const char *text, const char *name, const char *label)
{
	size_t nl = strlen(name);
	double sum = NAN;
	for (const char *l = text; l && *l;) {
		const char *eol = strchr(l, '\n');
		if (!strncmp(l, name, nl) && l[nl] == '{') {
			const char *close = strchr(l, '}'), *hit = strstr(l, label);
			if (close && (!eol || close < eol) && hit && hit < close) {
				double v = strtod(close + 1, NULL);
				sum = isnan(sum) ? v : sum + v;
			}
		}
		l = eol ? eol + 1 : NULL;
	}
	return sum;
}

/* "the counters moved more than the workload explains" */
static void traffic_note(double moved, double sent, char *out, size_t sz)
{
	out[0] = '\0';
	if (moved > sent)
		snprintf(out, sz,
		         "; note: decode counted %.0f prompt tokens, the workload sent %.0f: other "
		         "traffic on this decode makes the deltas unreliable",
		         moved, sent);
}

static double src_delta2(const char *before, const char *after, const char *src)
{
	char label[64];
	double a, b;
	snprintf(label, sizeof(label), "source=\"%s\"", src);
	a = label_sum(after, "vllm:prompt_tokens_by_source_total", label);
	b = label_sum(before, "vllm:prompt_tokens_by_source_total", label);
	return (isnan(a) ? 0 : a) - (isnan(b) ? 0 : b);
}

/* A sample of name (with or without labels, with or without _total) somewhere in text. */
static bool has_sample(const char *text, const char *name)
{
	size_t nl = strlen(name);
	for (const char *l = text; l && *l;) {
		const char *eol = strchr(l, '\n');
		if (!strncmp(l, name, nl) &&
		    (l[nl] == '{' || l[nl] == ' ' || !strncmp(l + nl, "_total", 6)))
			return true;
		l = eol ? eol + 1 : NULL;
	}
	return false;
}

/* Delta of an unlabelled or labelled counter, summed over its labels; 0 when absent. */
static double plain_delta(const char *before, const char *after, const char *name)
{
	struct hr_metrics ma, mb;
	double d;

	if (hr_metrics_parse(after ? after : "", &ma))
		return 0;
	if (hr_metrics_parse(before ? before : "", &mb)) {
		hr_metrics_free(&ma);
		return 0;
	}
	d = hr_metric_delta(&mb, &ma, name);
	hr_metrics_free(&ma);
	hr_metrics_free(&mb);
	return d;
}

/* Which by-source era decode counts in: the table's row for vllm (when given and the row is
 * sure of it), else decode's /metrics (vllm:prompt_tokens_recomputed exists only from #33290 to
 * #38709). -1 with detail when the two disagree. */
static int src_era(const char *after, const char *vllm, const char **how, char *detail, size_t sz)
{
	bool rc = has_sample(after, "vllm:prompt_tokens_recomputed");
	enum cfg_src_era from_metrics = rc ? CFG_SRC_N_1 : CFG_SRC_N_0;
	struct cfg_vllm_info vi;
	char err[256];

	*how = rc ? "decode's /metrics has vllm:prompt_tokens_recomputed"
	          : "decode's /metrics has no vllm:prompt_tokens_recomputed";
	if (!vllm || cfg_vllm_lookup(vllm, &vi, err, sizeof(err)) || vi.src == CFG_SRC_NONE)
		return (int)from_metrics;
	if (vi.uncertain && strstr(vi.uncertain, "by-source"))
		return (int)from_metrics; /* the row itself leaves the era to /metrics */
	if (vi.src != from_metrics) {
		snprintf(detail, sz,
		         "vLLM %s (table row %s) counts %s, but %s: is decode really %s? "
		         "(vLLM #33290 added it, #38709 removed it)",
		         vllm, vi.row, cfg_src_era_name(vi.src), *how, vllm);
		return -1;
	}
	*how = "the table's row for the given vllm=";
	return (int)vi.src;
}

enum hr_status hr_src_judge(const char *before, const char *after, const char *vllm, double n,
                            double ok, double n1, char *detail, size_t sz)
{
	const char *how;
	int era = src_era(after, vllm, &how, detail, sz);
	double ext = src_delta2(before, after, "external_kv_transfer");
	double loc = src_delta2(before, after, "local_compute");
	double hit = src_delta2(before, after, "local_cache_hit");
	double rc = plain_delta(before, after, "vllm:prompt_tokens_recomputed_total");
	/* a Mamba/GDN request: external N-1 (get_num_new_matched_tokens' count), the last token
	 * computed on decode (mooncake_connector.py @ 00f4240e, #46807) */
	double want_loc = era == CFG_SRC_N_1 ? ok : n1, want_ext = n - n1;
	bool pass;
	char note[300], rcs[160] = "", mam[120] = "";

	if (era < 0)
		return HR_FAIL;
	if (era == CFG_SRC_N_1)
		snprintf(rcs, sizeof(rcs), ", prompt_tokens_recomputed +%.0f (expected %.0f)", rc,
		         ok);
	if (n1 > 0)
		snprintf(mam, sizeof(mam), "; %.0f Mamba/GDN requests loaded N-1 (#46807)", n1);
	traffic_note(ext + loc + hit - (era == CFG_SRC_N_1 ? ok : n1), n, note, sizeof(note));
	pass = ext + hit == want_ext && loc == want_loc && (era != CFG_SRC_N_1 || rc == ok);
	snprintf(detail, sz,
	         "signal vllm:prompt_tokens_by_source_total, %s (%s%s%s): external_kv_transfer "
	         "+%.0f (expected %.0f = the prompt per request%s), local_compute +%.0f "
	         "(expected %.0f), local_cache_hit +%.0f%s%s over %.0f requests, %.0f prompt "
	         "tokens%s",
	         era == CFG_SRC_N_1 ? "vLLM 0.16 - 0.20 counting (#33290)"
	                            : "vLLM >= 0.21 counting (#37460)",
	         how, *how == 't' && vllm ? vllm : "", mam, ext, want_ext,
	         n1 > 0 ? ", less one per Mamba/GDN request" : "", loc, want_loc, hit,
	         hit > 0 ? " (subtracted: decode has prefix caching on; start it with "
	                   "--no-enable-prefix-caching)"
	                 : "",
	         rcs, ok, n, note);
	return pass ? HR_PASS : HR_FAIL;
}

/* kv_reused from the real signals (spec 5). A transferred n-token prompt: by-source counts
 * external n and local_compute 1 (0.16 - 0.20) or 0 (0.21 on); prompt_tokens_cached counts
 * n-1 (vLLM recomputes the last token). A silent recompute counts local_compute n. */
enum hr_status hr_external_kv_reused(const struct hr_run_data *rd, char *detail, size_t sz)
{
	double n = 0, want = 0, ok = 0, cached_sum = 0;
	bool all_cached = true;
	char note[300];
	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *r = &rd->reqs[i];
		if (r->status != 200 || r->invalid || r->usage_prompt <= 0 || r->kv_check_failed)
			continue;
		ok++;
		n += (double)r->usage_prompt;
		want += (double)r->usage_prompt - 1;
		all_cached &= r->usage_cached >= 0;
		cached_sum += r->usage_cached > 0 ? (double)r->usage_cached : 0;
	}
	if (!ok) {
		snprintf(detail, sz, "no request answered 200 with usage.prompt_tokens");
		return HR_FAIL;
	}
	if (!isnan(label_sum(rd->d_after_text, "vllm:prompt_tokens_by_source_total",
	                     "source=\"external_kv_transfer\"")))
		return hr_src_judge(rd->d_before_text, rd->d_after_text, rd->vllm, n, ok,
		                    rd->mamba ? ok : 0, detail, sz);
	if (!isnan(hr_metrics_get(&rd->d_after, "vllm:prompt_tokens_cached_total"))) {
		double c =
		    hr_metric_delta(&rd->d_before, &rd->d_after, "vllm:prompt_tokens_cached_total");
		traffic_note(
		    hr_metric_delta(&rd->d_before, &rd->d_after, "vllm:prompt_tokens_total"), n,
		    note, sizeof(note));
		snprintf(
		    detail, sz,
		    "signal vllm:prompt_tokens_cached_total (this vLLM has no "
		    "prompt_tokens_by_source): +%.0f, expected %.0f (prompt-1 per request) over "
		    "%.0f requests, %.0f prompt tokens%s",
		    c, want, ok, n, note);
		return c == want ? HR_PASS : HR_FAIL;
	}
	if (all_cached) {
		snprintf(detail, sz,
		         "signal usage.prompt_tokens_details.cached_tokens (no vLLM counter on "
		         "/metrics): %.0f, expected %.0f (prompt-1 per request) over %.0f requests",
		         cached_sum, want, ok);
		return cached_sum == want ? HR_PASS : HR_FAIL;
	}
	if (!isnan(hr_metrics_get(&rd->d_after, "pdkv_kv_reused_tokens_total"))) {
		double re =
		    hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_reused_tokens_total");
		double rc =
		    hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_recomputed_tokens_total");
		snprintf(detail, sz,
		         "signal pdkv_kv_reused_tokens_total (a pdkv stand-in, no vLLM signal): "
		         "reused +%.0f of %.0f prompt tokens, recomputed +%.0f over %.0f requests",
		         re, n, rc, ok);
		return re == n - (rd->mamba ? ok : 0) && rc == 0 ? HR_PASS : HR_FAIL;
	}
	snprintf(detail, sz,
	         "this vLLM exposes no signal that tells reuse from recompute; start decode with "
	         "--enable-prompt-tokens-details");
	return HR_NOTRUN;
}

struct ext {
	const struct hr_scenario *sc;
	const struct hr_opts *o;
	struct hr_result *res;
	struct hr_run_data rd;
	double deadline;
};

static void efail(struct ext *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void efail(struct ext *e, const char *fmt, ...)
{
	va_list ap;
	if (e->res->status == HR_FAIL)
		return;
	e->res->status = HR_FAIL;
	va_start(ap, fmt);
	vsnprintf(e->res->reason, sizeof(e->res->reason), fmt, ap);
	va_end(ap);
}

static struct hr_req *ext_reqs(const struct hr_scenario *sc)
{
	struct hr_req *q = calloc((size_t)sc->wl.requests, sizeof(*q));
	for (int i = 0; q && i < sc->wl.requests; i++) {
		q[i].idx = i;
		q[i].planned_tokens = sc->wl.prompt_tokens[i];
		q[i].usage_prompt = q[i].usage_completion = q[i].usage_cached = -1;
		q[i].prompt = sc->wl.prompts ? strdup(sc->wl.prompts[(size_t)i % sc->wl.nprompts])
		                             : hr_prompt_text(i, sc->wl.prompt_tokens[i], 7);
	}
	return q;
}

static int scrape(const char *base, char **text, struct hr_metrics *m)
{
	*text = get_text(base, "/metrics");
	memset(m, 0, sizeof(*m));
	return *text ? hr_metrics_parse(*text, m) : -1;
}

/* The startup advice of spec 5, and what decode's /metrics says about it. */
static void advice(struct ext *e, const char *dtext)
{
	FILE *f = e->o->progress;
	if (!f)
		return;
	fprintf(f, "# external: advice for decode: --no-enable-prefix-caching (else local cache "
	           "hits are subtracted), \"kv_load_failure_policy\":\"fail\" in its "
	           "--kv-transfer-config, --enable-prompt-tokens-details\n");
	if (dtext && strstr(dtext, "enable_prefix_caching=\"True\""))
		fprintf(f, "# external: decode's vllm:cache_config_info says prefix caching is ON: "
		           "kv_reused subtracts local_cache_hit\n");
	if (dtext && !strstr(dtext, "vllm:prompt_tokens_by_source_total") &&
	    !strstr(dtext, "vllm:prompt_tokens_cached_total"))
		fprintf(f,
		        "# external: decode's /metrics has neither "
		        "vllm:prompt_tokens_by_source_total nor vllm:prompt_tokens_cached_total\n");
}

/* The vLLM installed here (or PDKV_VLLM=PATH) against pdkv's model, once per run; silent when
 * there is none to see (pdkv vllm-drift, docs/vllm-drift.md). */
static void drift_note(const struct hr_opts *o)
{
	static bool said;
	char line[512];
	if (!o->progress || said)
		return;
	said = true;
	if (cfg_drift_summary(getenv("PDKV_VLLM"), NULL, 30000, line, sizeof(line)) >= 0)
		fprintf(o->progress, "# external: %s (pdkv vllm-drift)\n", line);
}

static void add_check(struct ext *e, const char *name, enum hr_status st, const char *detail)
{
	struct hr_check_result *c = &e->res->checks[e->res->nchecks++];
	c->name = hr_check_find(name)->name;
	c->pass = st == HR_PASS;
	c->notrun = st == HR_NOTRUN;
	snprintf(c->detail, sizeof(c->detail), "%s", detail);
	if (st == HR_FAIL)
		efail(e, "%s: %s", name, detail);
}

static void judge(struct ext *e)
{
	const struct hr_scenario *sc = e->sc;
	char d[1024];
	bool key_notrun = false;
	e->res->checks = calloc(sc->nchecks, sizeof(*e->res->checks));
	if (!e->res->checks)
		return;
	for (size_t i = 0; i < sc->nchecks; i++) {
		const struct hr_check *ck = hr_check_find(sc->checks[i]);
		enum hr_status st;
		if (hr_check_is_router(ck->name) || !strcmp(ck->name, "startup"))
			continue; /* need pdkv's stand-ins; a live deployment has none */
		if (!strcmp(ck->name, "kv_reused")) {
			st = hr_external_kv_reused(&e->rd, d, sizeof(d));
			key_notrun = st == HR_NOTRUN;
		} else if (!strcmp(ck->name, "output_equal") && !e->rd.have_reference) {
			st = HR_NOTRUN;
			snprintf(d, sizeof(d),
			         "no reference=URL (a non-disaggregated instance of the "
			         "same model, temperature 0) was given");
		} else if (!strcmp(ck->name, "integrity") &&
		           isnan(
		               hr_metrics_get(&e->rd.d_after, "pdkv_kv_checksum_failures_total"))) {
			continue; /* a pdkv stand-in's own counter; vLLM has no such thing */
		} else {
			st = ck->fn(&e->rd, d, sizeof(d)) ? HR_PASS : HR_FAIL;
		}
		add_check(e, ck->name, st, d);
	}
	if (e->res->status == HR_PASS && key_notrun) {
		e->res->status = HR_NOTRUN;
		snprintf(e->res->reason, sizeof(e->res->reason),
		         "kv_reused: this vLLM exposes no signal that tells reuse from recompute; "
		         "start decode with --enable-prompt-tokens-details");
	}
}

static void ext_body(struct ext *e)
{
	const struct hr_opts *o = e->o;
	struct hr_run_data *rd = &e->rd;
	char *ptext = NULL;
	double t0 = pd_now_s();
	drift_note(o);
	if (scrape(o->ext_decode, &rd->d_before_text, &rd->d_before)) {
		efail(e, "cannot read %s/metrics (decode) before the workload", o->ext_decode);
		return;
	}
	if (scrape(o->ext_prefill, &ptext, &rd->p_before) && o->progress)
		fprintf(o->progress,
		        "# external: %s/metrics (prefill) unreadable; its deltas are 0\n",
		        o->ext_prefill);
	free(ptext);
	advice(e, rd->d_before_text);
	rd->reqs = ext_reqs(e->sc);
	if (!rd->reqs) {
		efail(e, "out of memory");
		return;
	}
	hr_workload_run(o->ext_proxy, e->sc, rd->reqs, e->deadline, o->stop, NULL, NULL);
	e->res->workload_s = pd_now_s() - t0;
	if (scrape(o->ext_decode, &rd->d_after_text, &rd->d_after)) {
		efail(e, "cannot read %s/metrics (decode) after the workload", o->ext_decode);
		return;
	}
	if (scrape(o->ext_prefill, &ptext, &rd->p_after))
		rd->p_after = rd->p_before, memset(&rd->p_before, 0, sizeof(rd->p_before));
	free(ptext);
	rd->have_metrics = true;
	if (o->ext_reference) {
		rd->plain = ext_reqs(e->sc);
		if (rd->plain) {
			hr_workload_run(o->ext_reference, e->sc, rd->plain, e->deadline, o->stop,
			                NULL, NULL);
			rd->have_reference = true;
		}
	}
	judge(e);
}

static cJSON *deltas(const struct hr_metrics *b, const struct hr_metrics *a)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < a->n; i++)
		if (!strncmp(a->name[i], "vllm:", 5) || !strncmp(a->name[i], "pdkv_", 5))
			cJSON_AddNumberToObject(o, a->name[i], hr_metric_delta(b, a, a->name[i]));
	return o;
}

void hr_run_external(const struct hr_scenario *sc, const struct hr_opts *o, struct hr_result *res)
{
	struct ext e = {.sc = sc, .o = o, .res = res};
	double limit = o->timeout_s > 0    ? o->timeout_s
	               : sc->timeout_s > 0 ? sc->timeout_s
	                                   : EXT_TIMEOUT_S;
	memset(res, 0, sizeof(*res));
	res->name = pd_asprintf("%s [external]", sc->name);
	res->path = strdup(sc->path ? sc->path : "");
	res->status = HR_PASS;
	e.rd.sc = sc;
	e.rd.nreqs = (size_t)sc->wl.requests;
	e.rd.external = true;
	e.rd.vllm = o->ext_vllm;
	e.rd.mamba = o->ext_mamba;
	e.deadline = pd_now_s() + limit;
	if (o->ext_vllm) {
		struct cfg_vllm_info vi;
		char err[300];
		if (cfg_vllm_lookup(o->ext_vllm, &vi, err, sizeof(err)))
			efail(&e, "--external vllm=: %s", err);
		else if (o->progress)
			fprintf(o->progress, "# external: decode is vLLM %s (table row %s): %s\n",
			        o->ext_vllm, vi.row, cfg_src_era_name(vi.src));
	}
	if (res->status == HR_PASS)
		ext_body(&e);
	res->secs = pd_now_s() - (e.deadline - limit);
	if (e.rd.have_metrics) {
		res->metrics = cJSON_CreateObject();
		cJSON_AddItemToObject(res->metrics, "prefill",
		                      deltas(&e.rd.p_before, &e.rd.p_after));
		cJSON_AddItemToObject(res->metrics, "decode",
		                      deltas(&e.rd.d_before, &e.rd.d_after));
	}
	if (e.rd.reqs)
		res->requests = hr_request_summary(e.rd.reqs, e.rd.nreqs);
	hr_reqs_free(e.rd.reqs, e.rd.reqs ? e.rd.nreqs : 0);
	hr_reqs_free(e.rd.plain, e.rd.plain ? e.rd.nreqs : 0);
	hr_metrics_free(&e.rd.p_before);
	hr_metrics_free(&e.rd.p_after);
	hr_metrics_free(&e.rd.d_before);
	hr_metrics_free(&e.rd.d_after);
	free(e.rd.d_before_text);
	free(e.rd.d_after_text);
}
