/* cfg_vllm: vLLM release -> connector generation and the defaults that moved between releases.
 * Rows and their uncertainty are explained in docs/vllm-versions.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_vllm.h"

const char *const cfg_vllm_newest = "0.32";

struct row {
	int lo_maj, lo_min, lo_pat; /* first release of the row */
	int hi_maj, hi_min, hi_pat; /* last release of the row (hi_maj < 0: open ended) */
	const char *range;
	int gen; /* -1: no connector pdkv emulates */
	const char *policy;
	bool reqid_random, by_source, mooncake_metrics;
	const char *uncertain, *note;
};

static const struct row rows[] = {
    {0, 0, 0, 0, 6, 4, "< 0.6.5", -1, NULL, false, false, false, NULL,
     "vLLM before 0.6.5 has no MooncakeConnector (PyNccl-only disaggregated prefill)"},
    {0, 6, 5, 0, 8, 9999, "0.6.5 - 0.8.x", CFG_GEN_V0, NULL, false, false, false,
     "the pipe's sub-variants (metadata_backend, +100 rule, miss answer) moved inside this "
     "range; pick them with --kv-miss-mode / --kv-frame-format",
     "V0 MooncakePipe from mooncake.json (MOONCAKE_CONFIG_PATH); needs "
     "mooncake-transfer-engine <= 0.3.3.post2; on 0.8.x set VLLM_USE_V1=0"},
    {0, 9, 0, 0, 11, 9999, "0.9 - 0.11", -1, NULL, false, false, false, NULL,
     "no connector pdkv emulates: the V0 engine is being removed and the in-tree V1 "
     "MooncakeConnector first ships around 0.12 (the out-of-tree "
     "mooncake.mooncake_connector_v1 is not emulated); use 0.8 or 0.12+"},
    {0, 12, 0, 0, 12, 9999, "0.12", CFG_GEN_A, "recompute", false, false, false,
     "first release with gen A and with kv_load_failure_policy (vLLM PRs #24718, #26813)",
     "gen A: ZMQ side channel at VLLM_MOONCAKE_BOOTSTRAP_PORT + dp*tp + tp_rank; router = "
     "vLLM's toy proxy (pdkv-proxy --contract toy)"},
    {0, 13, 0, 0, 15, 9999, "0.13 - 0.15", CFG_GEN_A, "recompute", true, false, false,
     "the release that first randomises request ids (vLLM PR #27987, Dec 2025)",
     "gen A matches P and D by engine request id; with randomised ids P answers trans_done "
     "without writing (decode reads unwritten blocks) unless "
     "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1"},
    {0, 16, 0, 0, 16, 9999, "0.16", CFG_GEN_B0, "recompute", false, false, false,
     "which gen-B struct shape 0.16 ships (b0 assumed; --v1-shape bn for the other) and "
     "whether the policy default change to fail (vLLM PR #34896, 2026-02-19) is in it",
     "gen B: bootstrap server on VLLM_MOONCAKE_BOOTSTRAP_PORT, router must send transfer_id "
     "(pdkv-proxy --contract mooncake)"},
    {0, 17, 0, 0, 17, 9999, "0.17", CFG_GEN_BN, "fail", false, false, true,
     "the release that first carries MooncakePromMetrics (vllm:mooncake_*)",
     "gen B, current struct shape; kv_load_failure_policy defaults to fail"},
    {0, 18, 0, -1, 0, 0, ">= 0.18", CFG_GEN_BN, "fail", false, true, true,
     "vllm:prompt_tokens_by_source_total is listed from the 0.18.1 docs on",
     "gen B, current struct shape; kv_load_failure_policy defaults to fail"},
};

static const char *const gen_names[CFG_GEN_COUNT] = {"v0", "a", "b0", "bn", "bl"};

const char *cfg_gen_name(enum cfg_gen g)
{
	return (unsigned)g < CFG_GEN_COUNT ? gen_names[g] : "?";
}

int cfg_gen_parse(const char *s, enum cfg_gen *out)
{
	for (int i = 0; s && i < CFG_GEN_COUNT; i++)
		if (!strcmp(s, gen_names[i])) {
			*out = (enum cfg_gen)i;
			return 0;
		}
	return -1;
}

/* "X.Y[.Z]" then an optional suffix that starts with anything but a digit or '.'. */
static int parse_version(const char *s, int v[3])
{
	const char *p = s;
	int n = 0;

	v[0] = v[1] = v[2] = 0;
	if (*p == 'v')
		p++;
	while (n < 3) {
		char *end;
		long x;

		if (!isdigit((unsigned char)*p))
			return -1;
		x = strtol(p, &end, 10);
		if (x > 9999)
			return -1;
		v[n++] = (int)x;
		p = end;
		if (*p != '.' || !isdigit((unsigned char)p[1]))
			break;
		p++;
	}
	if (n < 2)
		return -1;
	if (*p && (isdigit((unsigned char)*p) || (*p == '.' && !isalpha((unsigned char)p[1]))))
		return -1;
	return 0;
}

static int cmp3(int a0, int a1, int a2, int b0, int b1, int b2)
{
	if (a0 != b0)
		return a0 < b0 ? -1 : 1;
	if (a1 != b1)
		return a1 < b1 ? -1 : 1;
	return a2 < b2 ? -1 : a2 > b2;
}

static bool in_row(const struct row *r, const int v[3])
{
	if (cmp3(v[0], v[1], v[2], r->lo_maj, r->lo_min, r->lo_pat) < 0)
		return false;
	if (r->hi_maj < 0)
		return true;
	return cmp3(v[0], v[1], v[2], r->hi_maj, r->hi_min, r->hi_pat) <= 0;
}

int cfg_vllm_lookup(const char *version, struct cfg_vllm_info *out, char *err, size_t errsz)
{
	int v[3];

	memset(out, 0, sizeof(*out));
	if (!version || parse_version(version, v) || strlen(version) >= sizeof(out->version)) {
		snprintf(err, errsz,
		         "--vllm-version: expected a vLLM release such as 0.8.5, 0.15 or "
		         "0.16.0, got \"%s\"",
		         version ? version : "");
		return -1;
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		if (!in_row(r, v))
			continue;
		if (r->gen < 0) {
			snprintf(err, errsz, "--vllm-version %s: %s", version, r->note);
			return -1;
		}
		snprintf(out->version, sizeof(out->version), "%s", version);
		out->major = v[0];
		out->minor = v[1];
		out->patch = v[2];
		out->row = r->range;
		out->gen = (enum cfg_gen)r->gen;
		out->policy = r->policy;
		out->reqid_random = r->reqid_random;
		out->by_source = r->by_source;
		out->mooncake_metrics = r->mooncake_metrics;
		out->uncertain = r->uncertain;
		out->note = r->note;
		return 0;
	}
	snprintf(err, errsz, "--vllm-version %s: not in pdkv's version table", version);
	return -1;
}

void cfg_vllm_print_table(FILE *f)
{
	fprintf(f, "%-14s %-4s %-22s %-10s %s\n", "vLLM", "gen", "kv_load_failure_policy",
	        "metrics", "notes");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		char m[16];

		snprintf(m, sizeof(m), "%s%s", r->by_source ? "src " : "",
		         r->mooncake_metrics ? "mc" : (r->by_source ? "" : "-"));
		fprintf(f, "%-14s %-4s %-22s %-10s %s\n", r->range,
		        r->gen < 0 ? "none" : gen_names[r->gen],
		        r->policy ? r->policy : "(no field)", r->gen < 0 ? "" : m, r->note);
		if (r->uncertain)
			fprintf(f, "%-14s %-4s %-22s %-10s uncertain: %s\n", "", "", "", "",
			        r->uncertain);
	}
	fprintf(f,
	        "default (no --vllm-version): %s, gen %s; metrics: src = "
	        "vllm:prompt_tokens_by_source_total, mc = vllm:mooncake_*\n",
	        cfg_vllm_newest, gen_names[CFG_GEN_BN]);
}
