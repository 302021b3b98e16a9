/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_kv_reused: decode used the KV that prefill produced for every prompt token of every
 * request and recomputed none — the silent-recompute detector (Mooncake#456, #908). */
#include "hr.h"

#include <math.h>
#include <string.h>

/* pdkv's counter says every token was reused: vLLM's own by-source counter, as the emulated
 * release counts it (cfg_vllm.c's era), must say the same (hr_src_judge). */
static bool vllm_agrees(const struct hr_run_data *rd, double prompt, double ok, double n1,
                        char *detail, size_t sz)
{
	char v[700];
	size_t l = strlen(detail);

	if (!rd->d_after_text || !strstr(rd->d_after_text, "vllm:prompt_tokens_by_source_total"))
		return true; /* a release without the counter (V0, gen A) */
	if (hr_src_judge(rd->d_before_text, rd->d_after_text, rd->vllm, prompt, ok, n1, v,
	                 sizeof(v)) == HR_PASS)
		return true;
	snprintf(detail + l, sz - l, "; but vLLM's counter disagrees for %s: %s",
	         rd->vllm ? rd->vllm : "this release", v);
	return false;
}

static bool kv_reused(const struct hr_run_data *rd, char *detail, size_t sz)
{
	double prompt = 0, reused, recomputed, failures, received, n1;
	size_t ok = 0, no_usage = 0;
	if (!rd->have_metrics) {
		snprintf(detail, sz, "no /metrics from the stand-ins");
		return false;
	}
	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *r = &rd->reqs[i];
		if (r->status != 200 || r->invalid)
			continue;
		ok++;
		if (r->usage_prompt < 0)
			no_usage++;
		else
			prompt += (double)r->usage_prompt;
	}
	if (no_usage) /* fall back to the decode side's own prompt counter */
		prompt = hr_metric_delta(&rd->d_before, &rd->d_after, "vllm:prompt_tokens_total");
	reused = hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_reused_tokens_total");
	recomputed =
	    hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_recomputed_tokens_total");
	failures = hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_transfer_failures_total");
	received = hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_bytes_received_total");
	/* Mamba/GDN (vLLM #46807): these requests were loaded for N-1 tokens, the last one
	 * computed on decode by design, not a recompute */
	n1 = hr_metric_delta(&rd->d_before, &rd->d_after, "pdkv_kv_mamba_n1_requests_total");
	if (isnan(hr_metrics_get(&rd->d_after, "pdkv_kv_reused_tokens_total"))) {
		snprintf(detail, sz, "decode /metrics has no pdkv_kv_reused_tokens_total");
		return false;
	}
	snprintf(detail, sz,
	         "decode reused %.0f of %.0f prompt tokens, recomputed %.0f (%zu ok requests, "
	         "%.0f bytes received, %.0f transfer failures)",
	         reused, prompt, recomputed, ok, received, failures);
	if (n1 > 0) {
		size_t l = strlen(detail);

		snprintf(detail + l, sz - l,
		         "; %.0f requests of a Mamba/GDN model loaded N-1 tokens (vLLM #46807), "
		         "expected reused %.0f",
		         n1, prompt - n1);
	}
	if (!(ok > 0 && prompt > 0 && reused + n1 == prompt && recomputed == 0))
		return false;
	return vllm_agrees(rd, prompt, (double)ok, n1, detail, sz);
}

const struct hr_check hr_check_kv_reused = {
    .name = "kv_reused",
    .what = "decode reused every prompt token's KV (reused == prompt tokens, N-1 each on a "
            "Mamba/GDN model; 0 recomputed)",
    .fn = kv_reused,
};
