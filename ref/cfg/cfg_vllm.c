/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_vllm: vLLM release -> connector generation and the defaults that moved between releases.
 * Rows and their uncertainty are explained in docs/vllm-versions.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_vllm.h"

const char *const cfg_vllm_newest = "0.31";

/* One row per release range in which the wire, the metrics, the config surface or a default
 * moved. cite names the vLLM PRs (github.com/vllm-project/vllm) and the source read; dates are
 * the PR thread's. Where a PR's first release is not pinned, the row says so and takes the
 * later release (a feature is assumed only once it is surely shipped), except where noted. */
struct row {
	int lo_maj, lo_min, lo_pat; /* first release of the row */
	int hi_maj, hi_min, hi_pat; /* last release of the row (hi_maj < 0: open ended) */
	const char *range;
	int gen; /* -1: no connector pdkv emulates */
	const char *policy;
	bool reqid_random;
	enum cfg_src_era src;
	bool recomputed;
	unsigned feat;
	const char *cite, *uncertain, *note;
};

#define F_TP  CFG_F_TP_TOPOLOGY
#define F_HMA (CFG_F_TP_TOPOLOGY | CFG_F_HMA)
#define F_GDN (F_HMA | CFG_F_GDN_N1)
#define F_PP  (F_GDN | CFG_F_REMOTE_PP)
#define F_31  (F_PP | CFG_F_D_FAIL_REPORT | CFG_F_BOOT_ADDR | CFG_F_PREFIX_REPLAY)
#define NOTE_B                                                                                     \
	"gen B: bootstrap server on VLLM_MOONCAKE_BOOTSTRAP_PORT, router must send transfer_id "   \
	"(pdkv-proxy --contract mooncake); no vllm:mooncake_* metrics (stats are only logged)"

static const struct row rows[] = {
    {0, 0, 0, 0, 6, 4, "< 0.6.5", -1, NULL, false, CFG_SRC_NONE, false, 0,
     "#10884 (V0 MooncakePipe, first in 0.6.5)", NULL,
     "vLLM before 0.6.5 has no MooncakeConnector (PyNccl-only disaggregated prefill)"},
    {0, 6, 5, 0, 8, 9999, "0.6.5 - 0.8.x", CFG_GEN_V0, NULL, false, CFG_SRC_NONE, false, 0,
     "#10884 (V0 MooncakePipe)",
     "the pipe's sub-variants (metadata_backend, +100 rule, miss answer) moved inside this "
     "range; pick them with --kv-miss-mode / --kv-frame-format",
     "V0 MooncakePipe from mooncake.json (MOONCAKE_CONFIG_PATH); needs "
     "mooncake-transfer-engine <= 0.3.3.post2; on 0.8.x set VLLM_USE_V1=0"},
    {0, 9, 0, 0, 11, 9999, "0.9 - 0.11", -1, NULL, false, CFG_SRC_NONE, false, 0,
     "#24718 (in-tree V1 MooncakeConnector, after 0.11)", NULL,
     "no connector pdkv emulates: the V0 engine is being removed and the in-tree V1 "
     "MooncakeConnector first ships around 0.12 (the out-of-tree "
     "mooncake.mooncake_connector_v1 is not emulated); use 0.8 or 0.12+"},
    {0, 12, 0, 0, 12, 9999, "0.12", CFG_GEN_A, "recompute", false, CFG_SRC_NONE, false, 0,
     "#24718 (gen A), #26813 (kv_load_failure_policy)",
     "first release with gen A and with kv_load_failure_policy",
     "gen A: ZMQ side channel at VLLM_MOONCAKE_BOOTSTRAP_PORT + dp*tp + tp_rank; router = "
     "vLLM's toy proxy (pdkv-proxy --contract toy)"},
    {0, 13, 0, 0, 15, 9999, "0.13 - 0.15", CFG_GEN_A, "recompute", true, CFG_SRC_NONE, false, 0,
     "#27987 (random request-id suffix, Dec 2025), #34415 "
     "(VLLM_DISABLE_REQUEST_ID_RANDOMIZATION)",
     "the release that first randomises request ids",
     "gen A matches P and D by engine request id; with randomised ids P answers trans_done "
     "without writing (decode reads unwritten blocks) unless "
     "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1"},
    {0, 16, 0, 0, 16, 9999, "0.16", CFG_GEN_B0, "recompute", false, CFG_SRC_N_1, true, 0,
     "#31034 (gen B, mooncake_connector.py @ 0d6ccf68f, 2026-02-04: 6-field "
     "MooncakeXferMetadata; with #24718 the initial integration per RFC #36948), #33290 "
     "(prompt_tokens_by_source, approved 2026-02-03), #34896 (policy fail, 2026-02-19)",
     "whether the kv_load_failure_policy change to fail (#34896, 2026-02-19, five days before "
     "the 0.16.0 cut) is in it",
     NOTE_B},
    {0, 17, 0, 0, 18, 9999, "0.17 - 0.18", CFG_GEN_B0, "fail", false, CFG_SRC_N_1, true, 0,
     "#34896 (kv_load_failure_policy fail), #33290 (by-source: external N, local_compute 1, "
     "prompt_tokens_recomputed 1 per transfer); mooncake_connector.py history: b0 from "
     "0d6ccf68f (#31034) until b745e8b5d (#36869, merged 2026-03-25)",
     "whether 0.18 already sends block_lens (b1): #36869 merged 2026-03-25, eight days before "
     "0.18.0 (~2026-04-02); the later release is taken (--v1-shape b1 for the other)",
     "gen B, b0 struct shape; kv_load_failure_policy defaults to fail"},
    {0, 19, 0, 0, 20, 9999, "0.19 - 0.20", CFG_GEN_B1, "fail", false, CFG_SRC_N_1, true, F_TP,
     "#36869 (mooncake_connector.py @ b745e8b5d, 2026-03-25: block_lens, region length checks, "
     "\"This D tp_rank ... is not paired with P tp_rank ...\"); opendatahub-io/"
     "opendatahub-tests #1946 (0.19.1 counts local_compute 1); #37460 (PrefillStats, merged by "
     "2026-04-14 per #39808), #38709 (drops prompt_tokens_recomputed, opened 2026-04-01); "
     "v0.20.0 out by 2026-04-29",
     "whether 0.20 already has per-group block lists (b2): #40860 merged 2026-04-26, three days "
     "before 0.20.0 (the later release is taken; --v1-shape b2 for the other); by-source "
     "counting: #37460 landed after 0.19 and before 0.20.0, so 0.20 most likely counts as 0.21 "
     "does (local_compute 0, no prompt_tokens_recomputed); pdkv keeps the older counting until "
     "a 0.20 is read, and `pdkv run --external` reads the era from the decode's /metrics",
     "gen B, b1 struct shape (block_lens); heterogeneous TP pairs ranks by the TP ratio"},
    {0, 21, 0, 0, 21, 9999, "0.21", CFG_GEN_B2, "fail", false, CFG_SRC_N_0, false, F_TP,
     "#40860 (mooncake_connector.py @ 4d51588e2, 2026-04-26: req_blocks one list per KV-cache "
     "group, \"KV group count mismatch\"); #37460 + #39808 (local_compute 0 for a transfer), "
     "#38709 (no prompt_tokens_recomputed); opendatahub-tests #1946 (0.21.0 counts "
     "local_compute 0); v0.21.0 released 2026-05-15",
     "the first release with #40860 (0.20 or 0.21)",
     "gen B, b2 struct shape (block_lens, per-group block lists); heterogeneous TP pairs ranks "
     "by TransferTopology"},
    {0, 22, 0, 0, 22, 9999, "0.22", CFG_GEN_B2, "fail", false, CFG_SRC_N_0, false, F_HMA,
     "#41847 (HMA on by default for connectors that support it, opened 2026-05-06); "
     "mooncake_connector.py @ 6f955986e (2026-05-26) still b2; v0.22.0 released 2026-05-30",
     "whether 0.21 (2026-05-15, nine days after #41847 opened) already carries HMA; whether "
     "kv_block_lens (bn) landed in the four days between the newest history read (2026-05-26) "
     "and 0.22.0",
     "gen B, b2 struct shape; hybrid KV cache manager on: one block list per KV group"},
    {0, 23, 0, 0, 23, 9999, "0.23", CFG_GEN_BN, "fail", false, CFG_SRC_N_0, false, F_HMA,
     "kv_block_lens: read only in the newer mooncake_connector.py (@ 00f4240ee645, beside "
     "#44528's fields), no PR pinned; "
     "#41847 (HMA on); v0.23.0 released 2026-06-12",
     "the first release that sends kv_block_lens (bn) is not in any history read (after "
     "2026-05-26, at the latest with #44528); 0.23 is taken as bn, --v1-shape b2 for the other",
     "gen B, bn struct shape; hybrid KV cache manager on: one block list per KV group"},
    {0, 24, 0, 0, 25, 9999, "0.24 - 0.25", CFG_GEN_BL, "fail", false, CFG_SRC_N_0, false, F_HMA,
     "#44528 (PP on the prefill side: registered_layer_names/_indices/_group_indices, regions "
     "aligned by layer name; opened 2026-06-04; RFC #36948 lists it done); v0.24.0 released "
     "2026-07-01",
     "the first release with #44528 is not pinned (0.24 - 0.26); bl is taken early because "
     "an older prefill ignores the extra keys while a newer one refuses a decode without them",
     "gen B, bl: a decode must send the registered_* lists or the prefill answers ERROR "
     "(matching metadata lengths)"},
    {0, 26, 0, 0, 29, 9999, "0.26 - 0.29", CFG_GEN_BL, "fail", false, CFG_SRC_N_0, false, F_GDN,
     "#46807 (Mooncake GDN/Mamba and MLA for hybrid models, opened 2026-06-26); v0.25.0 out "
     "by 2026-07-13, v0.28.0 2026-08-26",
     "whether 0.25 already carries #46807 (the later release is taken)",
     "gen B, bl; Mamba/GDN models: P drops the last prompt token, D loads N-1"},
    {0, 30, 0, 0, 30, 9999, "0.30", CFG_GEN_BL, "fail", false, CFG_SRC_N_0, false, F_PP,
     "#56033 (remote_pp_size in the metadata, heterogeneous PP; merged 2026-09-09); v0.29.0 "
     "out by 2026-09-10, v0.30.0 by 2026-09-23",
     "whether 0.29 already carries #56033 (merged a day before 0.29.0 was out)",
     "gen B, bl; a decode sends remote_pp_size when its PP size is not 1"},
    {0, 31, 0, 0, 31, 9999, "0.31", CFG_GEN_BL, "fail", false, CFG_SRC_N_0, false, F_31,
     "mooncake_connector.py @ 00f4240ee645 (D RCVTIMEO + load-error report, "
     "bootstrap_server_address, prefix_replay_*); mooncake/stats.py @ e046c7da8842 "
     "(MooncakePromMetrics still a TODO; #50374 open); v0.31.0 released 2026-10-05",
     "which release first carries the D-side failure report and bootstrap_server_address "
     "(read only in the newest source)",
     "gen B, bl; the newest release pdkv's table was written against"},
};

static const char *const gen_names[CFG_GEN_COUNT] = {"v0", "a", "b0", "b1", "b2", "bn", "bl"};

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

static void fill(struct cfg_vllm_info *out, const struct row *r, const char *version,
                 const int v[3])
{
	snprintf(out->version, sizeof(out->version), "%s", version);
	out->major = v[0];
	out->minor = v[1];
	out->patch = v[2];
	out->row = r->range;
	out->gen = (enum cfg_gen)r->gen;
	out->policy = r->policy;
	out->reqid_random = r->reqid_random;
	out->src = r->src;
	out->recomputed = r->recomputed;
	out->feat = r->feat;
	out->cite = r->cite;
	out->uncertain = r->uncertain;
	out->note = r->note;
}

#define NROWS (sizeof(rows) / sizeof(rows[0]))

int cfg_vllm_lookup(const char *version, struct cfg_vllm_info *out, char *err, size_t errsz)
{
	const struct row *last = &rows[NROWS - 1];
	int v[3];

	memset(out, 0, sizeof(*out));
	if (!version || parse_version(version, v) || strlen(version) >= sizeof(out->version)) {
		snprintf(err, errsz,
		         "--vllm-version: expected a vLLM release such as 0.8.5, 0.15 or "
		         "0.16.0, got \"%s\"",
		         version ? version : "");
		return -1;
	}
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];

		if (!in_row(r, v))
			continue;
		if (r->gen < 0) {
			snprintf(err, errsz, "--vllm-version %s: %s", version, r->note);
			return -1;
		}
		fill(out, r, version, v);
		return 0;
	}
	if (cmp3(v[0], v[1], v[2], last->hi_maj, last->hi_min, last->hi_pat) > 0) {
		/* newer than the table: read as its newest row, and say so in the row name */
		fill(out, last, version, v);
		out->past_newest = true;
		out->row = "0.31 (pdkv's table ends at 0.31; a newer release is read as 0.31 and "
		           "may have moved: pdkv vllm-drift)";
		return 0;
	}
	snprintf(err, errsz, "--vllm-version %s: not in pdkv's version table", version);
	return -1;
}

const char *cfg_src_era_name(enum cfg_src_era e)
{
	switch (e) {
	case CFG_SRC_N_1:
		return "by-source N+1 (external N, local_compute 1, prompt_tokens_recomputed)";
	case CFG_SRC_N_0:
		return "by-source N (external N, local_compute 0)";
	default:
		return "no by-source counter";
	}
}

size_t cfg_vllm_rows(void)
{
	return NROWS;
}

int cfg_vllm_row(size_t i, const char **range, const char **cite, int *gen)
{
	if (i >= NROWS)
		return -1;
	*range = rows[i].range;
	*cite = rows[i].cite;
	*gen = rows[i].gen;
	return 0;
}

static const char *src_short(const struct row *r)
{
	if (r->gen < 0)
		return "";
	if (r->src == CFG_SRC_N_1)
		return "src=N+1 rc";
	return r->src == CFG_SRC_N_0 ? "src=N" : "-";
}

void cfg_vllm_print_table(FILE *f)
{
	fprintf(f, "%-13s %-4s %-22s %-10s %s\n", "vLLM", "gen", "kv_load_failure_policy",
	        "metrics", "notes");
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];

		fprintf(f, "%-13s %-4s %-22s %-10s %s\n", r->range,
		        r->gen < 0 ? "none" : gen_names[r->gen],
		        r->policy ? r->policy : "(no field)", src_short(r), r->note);
		fprintf(f, "%-13s %-4s %-22s %-10s evidence: %s\n", "", "", "", "", r->cite);
		if (r->uncertain)
			fprintf(f, "%-13s %-4s %-22s %-10s uncertain: %s\n", "", "", "", "",
			        r->uncertain);
	}
	fprintf(f,
	        "default (no --vllm-version): %s, gen %s; a later release is read as %s. "
	        "metrics: src=N+1 rc = vllm:prompt_tokens_by_source_total counts a transferred "
	        "N-token prompt as external N + local_compute 1 and "
	        "vllm:prompt_tokens_recomputed exists; src=N = external N, local_compute 0. No "
	        "release exposes vllm:mooncake_* (vLLM #50374 is open).\n",
	        cfg_vllm_newest, gen_names[rows[NROWS - 1].gen], cfg_vllm_newest);
}

bool cfg_vllm_newer(const struct cfg_vllm_info *a, const struct cfg_vllm_info *b)
{
	if (a->gen != b->gen)
		return a->gen > b->gen;
	if (a->major != b->major)
		return a->major > b->major;
	if (a->minor != b->minor)
		return a->minor > b->minor;
	return a->patch > b->patch;
}
