/* SPDX-License-Identifier: Apache-2.0 */
/* upg_report: what `pdkv upgrade-check` prints — a P x D matrix per router contract with the
 * first error of each failed cell, the change list from pdkv's version table, JSON and JUnit. */
#include "upg.h"
#include "cfg/cfg_drift.h"
#include "pd_util.h"
#include "pd_env.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* What each connector generation puts on the wire (docs/wire-v1.md, docs/vllm-versions.md and
 * ref/cfg/cfg_vllm.h, which cite the vLLM PRs); a generation added later prints its name only. */
static const char *const gen_wire[CFG_GEN_COUNT] = {
    "V0 MooncakePipe: mooncake.json, a metadata service, tensors over ZMQ PUSH/PULL",
    "V1 gen A: a ZMQ ROUTER side channel per rank, MooncakeAgentMetadata (5 fields), P and D "
    "matched by engine request id",
    "V1 gen B (shape b0): HTTP bootstrap server, worker ROUTERs, MooncakeXferMetadata "
    "(6 fields), matched by the router's transfer_id",
    "gen B shape b1: MooncakeXferMetadata gains block_lens (7 fields), the prefill checks "
    "region lengths and pairs TP ranks (vLLM #36869)",
    "gen B shape b2: MooncakeXferMetadata with block_lens (7 fields) and one block list per "
    "KV-cache group in req_blocks (vLLM #40860)",
    "gen B shape bn: MooncakeXferMetadata gains kv_block_lens (8 fields: block_lens, "
    "kv_block_lens, per-group block lists)",
    "gen B shape bl: bn plus registered_layer_names / _indices / _group_indices, the prefill "
    "aligns regions by layer name (vLLM #44528)",
};

/* The CFG_F_* bits (ref/cfg/cfg_vllm.h; each row cites the PR): kind and what it means. */
static const struct {
	unsigned bit;
	const char *kind, *what;
} feats[] = {
    {CFG_F_TP_TOPOLOGY, "behaviour",
     "heterogeneous TP: P and D ranks paired by TransferTopology, head slices"},
    {CFG_F_D_FAIL_REPORT, "behaviour",
     "decode reports a failed pull as a load error (kv_load_failure_policy); its DEALER "
     "timeout is the abort timeout + 60 s"},
    {CFG_F_HMA, "wire", "hybrid KV cache manager: one block list per KV group"},
    {CFG_F_GDN_N1, "behaviour",
     "Mamba/GDN models: prefill drops the last prompt token, decode loads N-1"},
    {CFG_F_REMOTE_PP, "config", "remote_pp_size: heterogeneous PP between P and D"},
    {CFG_F_BOOT_ADDR, "config", "kv_connector_extra_config.bootstrap_server_address"},
    {CFG_F_PREFIX_REPLAY, "wire", "prefix_replay_* fields (opt-in, DeepSeek-V4.1)"},
};

/* How far pdkv's model is from the vLLM this host can see (the one `python3` finds, or
 * PDKV_VLLM=PATH), from `pdkv vllm-drift`; NULL when there is none to see. Once per run. */
static const char *drift_summary(void)
{
	static char line[512];
	static int state; /* 0 = not asked, 1 = have a line, -1 = nothing to say */
	if (!state)
		state =
		    cfg_drift_summary(pd_env_str("PDKV_VLLM"), NULL, 30000, line, sizeof(line)) >= 0
		        ? 1
		        : -1;
	return state > 0 ? line : NULL;
}

static void add_change(cJSON *a, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_change(cJSON *a, const char *kind, const char *fmt, ...)
{
	char buf[900];
	va_list ap;
	cJSON *o = cJSON_CreateObject();
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cJSON_AddStringToObject(o, "kind", kind);
	cJSON_AddStringToObject(o, "what", buf);
	cJSON_AddItemToArray(a, o);
}

static const char *wire_of(enum cfg_gen g)
{
	return (unsigned)g < CFG_GEN_COUNT && gen_wire[g] ? gen_wire[g] : cfg_gen_name(g);
}

static void metric_change(cJSON *a, bool was, bool now, const char *name)
{
	if (was != now)
		add_change(a, "metrics", "%s %s", now ? "+" : "-", name);
}

cJSON *upg_changes(const struct upg_plan *p)
{
	const struct cfg_vllm_info *o = &p->ver[0], *n = &p->ver[1];
	cJSON *a = cJSON_CreateArray();
	unsigned known = 0;

	if (o->gen != n->gen)
		add_change(a, "wire", "%s -> %s: %s", cfg_gen_name(o->gen), cfg_gen_name(n->gen),
		           wire_of(n->gen));
	if (strcmp(p->contract_buf[0], p->contract_buf[1]))
		add_change(a, "router", "contract %s -> %s (pdkv-proxy --contract)",
		           p->contract_buf[1], p->contract_buf[0]);
	if ((o->policy == NULL) != (n->policy == NULL) ||
	    (o->policy && n->policy && strcmp(o->policy, n->policy)))
		add_change(a, "default", "kv_load_failure_policy default %s -> %s",
		           o->policy ? o->policy : "(no such key)",
		           n->policy ? n->policy : "(no such key)");
	/* the table's flag speaks of gen A's pairing by request id only */
	if (o->gen == CFG_GEN_A && n->gen == CFG_GEN_A && o->reqid_random != n->reqid_random)
		add_change(a, "behaviour",
		           "engine request ids %s randomised (gen A pairs P and D by them; "
		           "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1)",
		           n->reqid_random ? "now" : "no longer");
	metric_change(a, o->src != CFG_SRC_NONE, n->src != CFG_SRC_NONE,
	              "vllm:prompt_tokens_by_source_total");
	if (o->src != CFG_SRC_NONE && n->src != CFG_SRC_NONE && o->src != n->src)
		add_change(a, "metrics",
		           "vllm:prompt_tokens_by_source_total counts a transferred prompt as %s "
		           "(was %s)",
		           cfg_src_era_name(n->src), cfg_src_era_name(o->src));
	metric_change(a, o->recomputed, n->recomputed, "vllm:prompt_tokens_recomputed");
	for (size_t i = 0; i < PD_ARRAY_SIZE(feats); i++)
		if ((o->feat ^ n->feat) & feats[i].bit)
			add_change(a, feats[i].kind, "%s %s", n->feat & feats[i].bit ? "+" : "-",
			           feats[i].what);
	for (size_t i = 0; i < PD_ARRAY_SIZE(feats); i++)
		known |= feats[i].bit;
	for (unsigned b = 0; b < 32; b++) /* a bit the table gained after this file */
		if (((o->feat ^ n->feat) >> b & 1u) && !(known >> b & 1u))
			add_change(a, "feature", "%s feature bit %u of the table",
			           n->feat >> b & 1u ? "+" : "-", b);
	for (int i = 0; i < 2; i++) {
		const struct cfg_vllm_info *v = &p->ver[i];
		if (v->note && (i == 1 || strcmp(o->row, n->row)))
			add_change(a, "note", "%s (row %s): %s", v->version, v->row, v->note);
		if (v->uncertain && (i == 1 || strcmp(o->row, n->row)))
			add_change(a, "uncertain", "%s (row %s): %s", v->version, v->row,
			           v->uncertain);
	}
	return a;
}

static void print_matrix(FILE *f, const struct upg_plan *p, size_t ci, int *foot)
{
	char h[2][64];
	const struct upg_cell *fl[4];
	int nfl = 0;

	if (p->ncontracts == 1)
		fprintf(f, "\nrouter contract %s (both releases'):\n", p->contract[ci]);
	else
		fprintf(f, "\nrouter contract %s (the %s release's, %s):\n", p->contract[ci],
		        ci == 0 ? "newer" : "older", p->ver[ci == 0 ? 1 : 0].version);
	for (int i = 0; i < 2; i++)
		snprintf(h[i], sizeof(h[i]), "%s (%s)", p->ver[i].version,
		         cfg_gen_name(p->ver[i].gen));
	fprintf(f, "  %-22s decode %-22s decode %s\n", "", h[0], h[1]);
	for (int pn = 0; pn < 2; pn++) {
		char lbl[80];
		snprintf(lbl, sizeof(lbl), "prefill %s", h[pn]);
		fprintf(f, "  %-22s", lbl);
		for (int dn = 0; dn < 2; dn++) {
			const struct upg_cell *c = upg_cell_at(p, ci, pn, dn);
			char v[48];
			if (!c)
				continue;
			if (c->verdict != UPG_PASS && c->error[0]) {
				snprintf(v, sizeof(v), "%s [%d]", upg_verdict_name(c->verdict),
				         ++*foot);
				fl[nfl++] = c;
			} else {
				snprintf(v, sizeof(v), "%s", upg_verdict_name(c->verdict));
			}
			fprintf(f, dn ? " %s" : " %-29s", v);
		}
		fprintf(f, "\n");
	}
	for (int i = 0; i < nfl; i++)
		fprintf(f, "  [%d] P %s / D %s: %.400s\n", *foot - nfl + 1 + i,
		        p->ver[fl[i]->p_new].version, p->ver[fl[i]->d_new].version, fl[i]->error);
}

void upg_print(FILE *f, const struct upg_plan *p, bool verbose)
{
	int foot = 0, rc = upg_exit_code(p);
	cJSON *ch = upg_changes(p);
	const struct upg_cell *oo = upg_cell_at(p, p->ncontracts - 1, 0, 0),
	                      *nn = upg_cell_at(p, 0, 1, 1);
	const char *drift = drift_summary();

	fprintf(f,
	        "pdkv upgrade-check: vLLM %s -> %s%s (table rows %s -> %s), %zu cells in %.1fs\n",
	        p->downgrade ? p->ver[1].version : p->ver[0].version,
	        p->downgrade ? p->ver[0].version : p->ver[1].version,
	        p->downgrade ? " (a downgrade)" : "", p->ver[0].row, p->ver[1].row, p->ncells,
	        p->wall_s);
	if (p->ver[0].reqid_random || p->ver[1].reqid_random)
		fprintf(f,
		        "(every cell with VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1, as the table's "
		        "note for %s says)\n",
		        p->ver[p->ver[0].reqid_random ? 0 : 1].version);
	for (size_t ci = 0; ci < p->ncontracts; ci++)
		print_matrix(f, p, ci, &foot);
	fprintf(f, "\nchanges %s -> %s (pdkv's version table):\n", p->ver[0].version,
	        p->ver[1].version);
	if (!cJSON_GetArraySize(ch))
		fprintf(f, "  (none: both releases are in the same row)\n");
	for (const cJSON *c = ch->child; c; c = c->next)
		fprintf(f, "  %-10s %s\n", cJSON_GetObjectItem(c, "kind")->valuestring,
		        cJSON_GetObjectItem(c, "what")->valuestring);
	cJSON_Delete(ch);
	if (drift)
		fprintf(f, "  %-10s %s\n", "drift", drift);
	if (verbose)
		for (size_t i = 0; i < p->ncells; i++)
			if (p->cell[i].ran)
				hr_report_line(f, &p->cell[i].res, true);
	fprintf(f, "\nverdict: old/old (%s, %s contract) %s, new/new (%s, %s contract) %s: %s\n",
	        p->ver[0].version, oo ? oo->contract : "?",
	        oo ? upg_verdict_name(oo->verdict) : "?", p->ver[1].version,
	        nn ? nn->contract : "?", nn ? upg_verdict_name(nn->verdict) : "?",
	        rc == 0    ? "exit 0 (mixed cells above are information)"
	        : rc == 77 ? "exit 77 (could not run here)"
	                   : "exit 1");
	if (p->interrupted)
		fprintf(f, "interrupted: the cells not run are NOTRUN\n");
}

static cJSON *release_json(const struct cfg_vllm_info *v, const char *contract)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "version", v->version);
	cJSON_AddStringToObject(o, "row", v->row);
	cJSON_AddStringToObject(o, "generation", cfg_gen_name(v->gen));
	cJSON_AddStringToObject(o, "contract", contract);
	if (v->policy)
		cJSON_AddStringToObject(o, "kv_load_failure_policy", v->policy);
	else
		cJSON_AddNullToObject(o, "kv_load_failure_policy");
	cJSON_AddStringToObject(o, "by_source", cfg_src_era_name(v->src));
	cJSON_AddBoolToObject(o, "prompt_tokens_recomputed", v->recomputed);
	cJSON_AddNumberToObject(o, "feat", v->feat);
	return o;
}

static cJSON *cell_json(const struct upg_plan *p, const struct upg_cell *c)
{
	cJSON *o = cJSON_CreateObject(), *ck;
	cJSON_AddStringToObject(o, "cell",
	                        c->p_new ? (c->d_new ? "new/new" : "new/old")
	                                 : (c->d_new ? "old/new" : "old/old"));
	cJSON_AddStringToObject(o, "prefill", p->ver[c->p_new].version);
	cJSON_AddStringToObject(o, "decode", p->ver[c->d_new].version);
	cJSON_AddStringToObject(o, "prefill_generation", cfg_gen_name(p->ver[c->p_new].gen));
	cJSON_AddStringToObject(o, "decode_generation", cfg_gen_name(p->ver[c->d_new].gen));
	cJSON_AddStringToObject(o, "contract", c->contract);
	cJSON_AddStringToObject(o, "verdict", upg_verdict_name(c->verdict));
	cJSON_AddStringToObject(o, "error", c->error);
	cJSON_AddStringToObject(o, "reason", c->res.reason);
	cJSON_AddNumberToObject(o, "secs", c->res.secs);
	ck = cJSON_AddArrayToObject(o, "checks");
	for (size_t i = 0; i < c->res.nchecks; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", c->res.checks[i].name);
		cJSON_AddBoolToObject(x, "pass", c->res.checks[i].pass);
		cJSON_AddStringToObject(x, "detail", c->res.checks[i].detail);
		cJSON_AddItemToArray(ck, x);
	}
	if (c->res.logs)
		cJSON_AddItemToObject(o, "logs", cJSON_Duplicate(c->res.logs, 1));
	if (c->res.kept && c->res.workdir[0])
		cJSON_AddStringToObject(o, "workdir", c->res.workdir);
	return o;
}

cJSON *upg_json(const struct upg_plan *p)
{
	cJSON *o = cJSON_CreateObject(), *cells, *m;
	const char *drift = drift_summary();
	int rc = upg_exit_code(p);

	cJSON_AddStringToObject(o, "from", p->ver[p->downgrade ? 1 : 0].version);
	cJSON_AddStringToObject(o, "to", p->ver[p->downgrade ? 0 : 1].version);
	cJSON_AddItemToObject(o, "older", release_json(&p->ver[0], p->contract_buf[1]));
	cJSON_AddItemToObject(o, "newer", release_json(&p->ver[1], p->contract_buf[0]));
	cJSON_AddItemToObject(o, "contracts",
	                      cJSON_CreateStringArray(p->contract, (int)p->ncontracts));
	m = cJSON_AddObjectToObject(o, "matrix"); /* contract -> "old/new" (P/D) -> verdict */
	cells = cJSON_AddArrayToObject(o, "cells");
	for (size_t i = 0; i < p->ncells; i++) {
		cJSON *x = cell_json(p, &p->cell[i]), *row;
		cJSON_AddItemToArray(cells, x);
		row = cJSON_GetObjectItem(m, p->cell[i].contract);
		if (!row)
			row = cJSON_AddObjectToObject(m, p->cell[i].contract);
		cJSON_AddStringToObject(row, cJSON_GetObjectItem(x, "cell")->valuestring,
		                        upg_verdict_name(p->cell[i].verdict));
	}
	cJSON_AddItemToObject(o, "changes", upg_changes(p));
	if (drift)
		cJSON_AddStringToObject(o, "drift", drift);
	cJSON_AddNumberToObject(o, "wall_s", p->wall_s);
	cJSON_AddBoolToObject(o, "interrupted", p->interrupted);
	cJSON_AddNumberToObject(o, "exit", rc);
	return o;
}

int upg_write_json(const char *path, const struct upg_plan *p)
{
	cJSON *o = upg_json(p);
	char *txt = o ? cJSON_Print(o) : NULL;
	int r = txt ? pd_write_file(path, txt, strlen(txt)) : -ENOMEM;
	free(txt);
	cJSON_Delete(o);
	return r;
}

/* JUnit through the runner's writer: a failed deciding cell (upg_cell_decides) is a <failure>;
 * any other cell that did not pass is information, so <skipped> with its verdict and error. */
int upg_write_junit(const char *path, const struct upg_plan *p)
{
	struct hr_result v[UPG_MAX_CELLS];
	struct hr_report rep = {.v = v, .n = 0, .wall_s = p->wall_s};
	int r;

	for (size_t i = 0; i < p->ncells; i++) {
		const struct upg_cell *c = &p->cell[i];
		struct hr_result *x = &v[rep.n++];
		bool mixed = !upg_cell_decides(p, c);
		memset(x, 0, sizeof(*x));
		x->name = pd_asprintf("upgrade P %s / D %s [%s]", p->ver[c->p_new].version,
		                      p->ver[c->d_new].version, c->contract);
		x->path = strdup("upgrade-check");
		x->secs = c->res.secs;
		x->status = c->verdict == UPG_PASS              ? HR_PASS
		            : c->verdict == UPG_NOTRUN || mixed ? HR_NOTRUN
		                                                : HR_FAIL;
		snprintf(x->reason, sizeof(x->reason), "%s%s: %.1000s",
		         mixed && c->verdict != UPG_NOTRUN ? "information: " : "",
		         upg_verdict_name(c->verdict), c->error);
	}
	r = hr_report_junit(path, &rep);
	for (size_t i = 0; i < rep.n; i++)
		hr_result_free(&v[i]);
	return r;
}
