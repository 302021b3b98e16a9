/* SPDX-License-Identifier: Apache-2.0 */
/* upg_run: the cells of `pdkv upgrade-check` — the two releases ordered, the router contracts,
 * one in-memory 1P1D scenario per cell run by the same runner as `pdkv run`, and each verdict. */
#include "upg.h"
#include "pd_util.h"

#include <stdlib.h>
#include <string.h>

/* The router contract the runner picks by default for a release (hr_scenario_gen.c's rule). */
static int default_contract(const struct cfg_vllm_info *v, char *out, size_t sz, char *err,
                            size_t errsz)
{
	struct hr_scenario sc;
	char *json = pd_asprintf("{\"name\":\"c\",\"vllm\":\"%s\"%s}", v->version,
	                         cfg_gen_is_v1(v->gen) ? "" : ",\"metadata\":\"http\"");
	int r = json ? hr_scenario_parse("upgrade-check", json, &sc, err, errsz) : -1;
	free(json);
	if (r)
		return -1;
	snprintf(out, sz, "%s", hr_scenario_grade_contract(&sc));
	hr_scenario_free(&sc);
	return 0;
}

int upg_plan_init(struct upg_plan *p, const char *from, const char *to, char *err, size_t errsz)
{
	struct cfg_vllm_info f, t;
	char why[600];

	memset(p, 0, sizeof(*p));
	if (cfg_vllm_lookup(from, &f, why, sizeof(why))) {
		snprintf(err, errsz, "--from: %s", why);
		return -1;
	}
	if (cfg_vllm_lookup(to, &t, why, sizeof(why))) {
		snprintf(err, errsz, "--to: %s", why);
		return -1;
	}
	if (!cfg_vllm_newer(&f, &t) && !cfg_vllm_newer(&t, &f)) {
		snprintf(err, errsz,
		         "--to: \"%s\" is the same release as --from \"%s\"; expected two "
		         "different releases",
		         to, from);
		return -1;
	}
	p->downgrade = cfg_vllm_newer(&f, &t);
	p->ver[0] = p->downgrade ? t : f;
	p->ver[1] = p->downgrade ? f : t;
	for (int i = 0; i < 2; i++)
		if (default_contract(&p->ver[1 - i], p->contract_buf[i], sizeof(p->contract_buf[i]),
		                     err, errsz))
			return -1;
	p->contract[0] = p->contract_buf[0];
	p->ncontracts = 1;
	if (strcmp(p->contract_buf[0], p->contract_buf[1]))
		p->contract[p->ncontracts++] = p->contract_buf[1];
	for (size_t ci = 0; ci < p->ncontracts; ci++)
		for (int k = 0; k < 4; k++) {
			struct upg_cell *c = &p->cell[p->ncells++];
			c->p_new = k >> 1;
			c->d_new = k & 1;
			c->ci = (int)ci;
			c->contract = p->contract[ci];
		}
	return 0;
}

/* A small 1P1D workload with the four checks every deployment must pass. */
int upg_cell_scenario(const struct upg_plan *p, const struct upg_cell *c, struct hr_scenario *sc,
                      char *err, size_t errsz)
{
	const struct cfg_vllm_info *pv = &p->ver[c->p_new], *dv = &p->ver[c->d_new];
	cJSON *o = cJSON_CreateObject(), *v, *t, *w;
	static const char *const geom[] = {"--kv-layers",    "2",   "--kv-heads",    "2",
	                                   "--head-dim",     "32",  "--dtype-bytes", "2",
	                                   "--ns-per-token", "1000"};
	static const char *const checks[] = {"http_ok", "kv_reused", "output_equal", "integrity"};
	static const int prompts[] = {64, 300, 17};
	char name[160], *json;
	int r;

	snprintf(name, sizeof(name), "upgrade-p%s-d%s-%s", pv->version, dv->version, c->contract);
	for (char *s = name; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
		            *s))
			*s = '_';
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "description", "pdkv upgrade-check cell");
	v = cJSON_AddObjectToObject(o, "vllm");
	cJSON_AddStringToObject(v, "prefill", pv->version);
	cJSON_AddStringToObject(v, "decode", dv->version);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "proxy"), "contract", c->contract);
	if (pv->reqid_random || dv->reqid_random) /* the table's documented workaround (its note) */
		cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "env"),
		                        "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION", "1");
	if (!cfg_gen_is_v1(pv->gen) && !cfg_gen_is_v1(dv->gen))
		cJSON_AddStringToObject(o, "metadata",
		                        "http"); /* V0: pdkv-metaserver, always here */
	t = cJSON_AddObjectToObject(o, "topology");
	cJSON_AddStringToObject(t, "prefill", "127.0.0.2");
	cJSON_AddStringToObject(t, "decode", "127.0.0.3");
	cJSON_AddStringToObject(t, "proxy", "127.0.0.1");
	cJSON_AddItemToObject(o, "standin_args",
	                      cJSON_CreateStringArray(geom, (int)PD_ARRAY_SIZE(geom)));
	w = cJSON_AddObjectToObject(o, "workload");
	cJSON_AddNumberToObject(w, "requests", 3);
	cJSON_AddNumberToObject(w, "concurrency", 1);
	cJSON_AddItemToObject(w, "prompt_tokens",
	                      cJSON_CreateIntArray(prompts, (int)PD_ARRAY_SIZE(prompts)));
	cJSON_AddNumberToObject(w, "max_tokens", 8);
	cJSON_AddItemToObject(o, "checks",
	                      cJSON_CreateStringArray(checks, (int)PD_ARRAY_SIZE(checks)));
	json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!json) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	r = hr_scenario_parse("upgrade-check", json, sc, err, errsz);
	free(json);
	return r;
}

/* "prefill: ERROR text" from a log line "12:00:00.000 pdkv-standin[prefill] ERROR text". */
static void log_line(char *out, size_t sz, const char *proc, const char *line)
{
	const char *lvl = strstr(line, " ERROR ");
	if (!lvl)
		lvl = strstr(line, " WARN ");
	snprintf(out, sz, "%s: %s", proc, lvl ? lvl + 1 : line);
}

/* The runner's own one-line reason after the log line, shortened: which check or phase broke. */
static void add_reason(char *out, size_t sz, const char *reason)
{
	size_t n = strlen(out);
	if (reason[0] && n + 16 < sz)
		snprintf(out + n, sz - n, " [runner: %.200s%s]", reason,
		         strlen(reason) > 200 ? "..." : "");
}

/* The first error seen: the earliest ERROR line of prefill, decode or the proxy (their logs'
 * clock stamps compare as text), else the earliest WARN line, else the runner's reason. */
static void first_error(struct upg_cell *c)
{
	static const char *const procs[] = {"prefill", "decode", "proxy"};
	static const char *const keys[] = {"first_error", "first_warning"};
	const struct hr_result *r = &c->res;

	for (size_t k = 0; k < PD_ARRAY_SIZE(keys); k++) {
		const char *best = NULL, *who = NULL;
		for (size_t i = 0; r->logs && i < PD_ARRAY_SIZE(procs); i++) {
			const cJSON *l = cJSON_GetObjectItem(r->logs, procs[i]);
			const cJSON *s = l ? cJSON_GetObjectItem(l, keys[k]) : NULL;
			if (cJSON_IsString(s) && (!best || strcmp(s->valuestring, best) < 0)) {
				best = s->valuestring;
				who = procs[i];
			}
		}
		if (best) {
			log_line(c->error, sizeof(c->error), who, best);
			add_reason(c->error, sizeof(c->error), r->reason);
			return;
		}
	}
	snprintf(c->error, sizeof(c->error), "%s", r->reason);
}

static bool same_generation(const struct cfg_vllm_info *a, const struct cfg_vllm_info *b)
{
	return cfg_gen_is_v1(a->gen) == cfg_gen_is_v1(b->gen) &&
	       cfg_gen_is_b(a->gen) == cfg_gen_is_b(b->gen);
}

static void run_cell(struct upg_plan *p, struct upg_cell *c, const struct hr_opts *o)
{
	struct hr_scenario sc;
	char err[1024];
	bool same = same_generation(&p->ver[c->p_new], &p->ver[c->d_new]);

	if (upg_cell_scenario(p, c, &sc, err, sizeof(err))) {
		/* the runner cannot even deploy it (V0 against V1): that is the error seen */
		c->verdict = same ? UPG_FAIL : UPG_INCOMPATIBLE;
		snprintf(c->error, sizeof(c->error), "not deployable: %s", err);
		return;
	}
	hr_run_scenario(&sc, o, &c->res);
	hr_scenario_free(&sc);
	c->ran = true;
	if (c->res.status == HR_PASS) {
		c->verdict = UPG_PASS;
		return;
	}
	if (c->res.status == HR_NOTRUN) {
		c->verdict = UPG_NOTRUN;
		snprintf(c->error, sizeof(c->error), "%s", c->res.reason);
		return;
	}
	c->verdict = same ? UPG_FAIL : UPG_INCOMPATIBLE;
	first_error(c);
}

void upg_run(struct upg_plan *p, const struct hr_opts *o, FILE *progress)
{
	double t0 = pd_now_s();

	for (size_t i = 0; i < p->ncells; i++) {
		struct upg_cell *c = &p->cell[i];
		double t = pd_now_s();
		if (o->stop && *o->stop) {
			p->interrupted = true;
			c->verdict = UPG_NOTRUN;
			snprintf(c->error, sizeof(c->error), "interrupted");
			continue;
		}
		if (progress) {
			fprintf(progress, "# [%zu/%zu] prefill %s, decode %s, contract %s ...\n",
			        i + 1, p->ncells, p->ver[c->p_new].version,
			        p->ver[c->d_new].version, c->contract);
			fflush(progress);
		}
		run_cell(p, c, o);
		if (o->stop && *o->stop) { /* a cell cut short says nothing about the pair */
			p->interrupted = true;
			c->verdict = UPG_NOTRUN;
			snprintf(c->error, sizeof(c->error), "interrupted");
		}
		if (progress) {
			fprintf(progress, "#        %s in %.1fs%s%.200s\n",
			        upg_verdict_name(c->verdict), pd_now_s() - t,
			        c->error[0] ? ": " : "", c->error);
			fflush(progress);
		}
	}
	p->wall_s = pd_now_s() - t0;
}

const struct upg_cell *upg_cell_at(const struct upg_plan *p, size_t ci, int p_new, int d_new)
{
	for (size_t i = 0; i < p->ncells; i++)
		if ((size_t)p->cell[i].ci == ci && p->cell[i].p_new == p_new &&
		    p->cell[i].d_new == d_new)
			return &p->cell[i];
	return NULL;
}

bool upg_cell_decides(const struct upg_plan *p, const struct upg_cell *c)
{
	return c == upg_cell_at(p, p->ncontracts - 1, 0, 0) || c == upg_cell_at(p, 0, 1, 1);
}

/* old/old is judged under the older release's own contract (the last index), new/new under
 * the newer's (index 0): the two deployments the upgrade starts and ends with. */
int upg_exit_code(const struct upg_plan *p)
{
	const struct upg_cell *oo = upg_cell_at(p, p->ncontracts - 1, 0, 0);
	const struct upg_cell *nn = upg_cell_at(p, 0, 1, 1);

	if (!oo || !nn)
		return 1;
	if (oo->verdict == UPG_PASS && nn->verdict == UPG_PASS)
		return 0;
	if ((oo->verdict == UPG_NOTRUN || nn->verdict == UPG_NOTRUN) && oo->verdict != UPG_FAIL &&
	    nn->verdict != UPG_FAIL)
		return 77;
	return 1;
}

const char *upg_verdict_name(enum upg_verdict v)
{
	static const char *const n[] = {"PASS", "FAIL", "INCOMPATIBLE", "NOTRUN"};
	return (unsigned)v < PD_ARRAY_SIZE(n) ? n[v] : "?";
}

void upg_plan_free(struct upg_plan *p)
{
	for (size_t i = 0; i < p->ncells; i++)
		hr_result_free(&p->cell[i].res);
}
