/* SPDX-License-Identifier: Apache-2.0 */
/* hr_src: decode's raw /metrics text and kv_reused judged on vLLM's own signals
 * (vllm:prompt_tokens_by_source_total by era, prompt_tokens_cached, usage.cached_tokens) — used
 * by the kv_reused check and by `pdkv run --external` (hr_external.c). */
#include "hr.h"
#include "pd_buf.h"
#include "pd_util.h"
#include "cfg/cfg_vllm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
