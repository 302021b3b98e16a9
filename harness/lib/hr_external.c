/* SPDX-License-Identifier: Apache-2.0 */
/* hr_external: `pdkv run --external` — a scenario's workload through someone else's deployment
 * (real vLLM prefill / decode / router): nothing is started, kv_reused reads vLLM's own signals. */
#include "cfg/cfg_drift.h"
#include "hr.h"
#include "pd_buf.h"
#include "pd_env.h"
#include "pd_util.h"
#include "cfg/cfg_vllm.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define EXT_TIMEOUT_S 300.0

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
	char url[600];
	snprintf(url, sizeof(url), "%s/metrics", base);
	*text = hr_metrics_text(url);
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
	if (cfg_drift_summary(pd_env_str("PDKV_VLLM"), NULL, 30000, line, sizeof(line)) >= 0)
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
