/* SPDX-License-Identifier: Apache-2.0 */
/* hr_scenario_gen: the scenario fields that pick the connector generation ("vllm",
 * "generation"), the router contract ("proxy") and extra stand-in environment ("env"). */
#include "hr.h"
#include "cfg/cfg_vllm.h"
#include "pd_util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The release a generation stands for when a scenario names only the generation: the first
 * release of gen A (no request-id randomisation), the first that carries B0, B1 (vLLM #36869)
 * and B2 (#40860), the newest that speaks BN (cfg_vllm.c: bl from 0.24, #44528), the newest
 * (BL). Each must be a row of that generation (test_hr_gen checks it). */
static const char *const representative[CFG_GEN_COUNT] = {"0.8.5", "0.12", "0.16", "0.19",
                                                          "0.21",  "0.23", NULL};

static const char *const contract_of_gen[CFG_GEN_COUNT] = {
    "v0", "toy", "mooncake", "mooncake", "mooncake", "mooncake", "mooncake"};

static const cJSON *str_field(const cJSON *root, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
	return j && cJSON_IsString(j) && *j->valuestring ? j : NULL;
}

static int parse_versions(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                          size_t errsz)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vllm");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "generation");
	struct cfg_vllm_info info;
	enum cfg_gen gen = CFG_GEN_V0;
	char why[400];

	if (v && !str_field(root, "vllm"))
		return pd_field_err(path, err, errsz, "vllm",
		                    "expected a vLLM release such as \"0.15\", or {\"prefill\": "
		                    "\"0.16\", \"decode\": \"0.17\"}");
	if (g && (!str_field(root, "generation") || cfg_gen_parse(g->valuestring, &gen)))
		return pd_field_err(path, err, errsz, "generation",
		                    "expected v0, a, b0, b1, b2, bn or bl");
	if (v) {
		if (cfg_vllm_lookup(v->valuestring, &info, why, sizeof(why)))
			return pd_field_err(path, err, errsz, "vllm", "%s", why);
		if (!g)
			gen = info.gen;
		else if (cfg_gen_is_b(info.gen) != cfg_gen_is_b(gen) ||
		         (info.gen == CFG_GEN_V0) != (gen == CFG_GEN_V0))
			return pd_field_err(
			    path, err, errsz, "generation",
			    "vLLM %s speaks generation %s; \"%s\" can only pick the gen-B "
			    "struct shape (b0, bn or bl) of a gen-B release",
			    v->valuestring, cfg_gen_name(info.gen), g->valuestring);
	}
	sc->gen = (int)gen;
	sc->vllm = strdup(v                     ? v->valuestring
	                  : representative[gen] ? representative[gen]
	                                        : cfg_vllm_newest);
	return sc->vllm ? 0 : -1;
}

/* "proxy.cmd": the user's router, words with {placeholders} (hr_router.c fills them) */
static int parse_proxy_cmd(const char *path, const cJSON *p, struct hr_scenario *sc, char *err,
                           size_t errsz)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(p, "cmd");
	const cJSON *ready = cJSON_GetObjectItemCaseSensitive(p, "ready");
	if (cmd) {
		if (!cJSON_IsArray(cmd) || cJSON_GetArraySize(cmd) == 0 ||
		    cJSON_GetArraySize(cmd) > 128)
			return pd_field_err(path, err, errsz, "proxy.cmd",
			                    "expected a non-empty list of strings such as "
			                    "[\"python3\", \"router.py\", \"--port\", \"{port}\"]");
		for (const cJSON *w = cmd->child; w; w = w->next)
			if (!cJSON_IsString(w) || strlen(w->valuestring) > 1000)
				return pd_field_err(
				    path, err, errsz, "proxy.cmd",
				    "every element must be a string of at most 1000 "
				    "characters");
		sc->proxy_cmd = cJSON_Duplicate(cmd, 1);
	}
	if (ready) {
		if (!cJSON_IsString(ready) || ready->valuestring[0] != '/' ||
		    strlen(ready->valuestring) > 200)
			return pd_field_err(path, err, errsz, "proxy.ready",
			                    "expected an HTTP path such as \"/health\"");
		if (!cmd)
			return pd_field_err(path, err, errsz, "proxy.ready", "needs proxy.cmd");
		sc->proxy_ready = strdup(ready->valuestring);
	}
	return 0;
}

static int parse_proxy(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                       size_t errsz)
{
	static const char *const contracts[] = {"v0", "toy", "mooncake", "auto"};
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "proxy"), *c = NULL;
	const char *name = contract_of_gen[sc->gen];

	if (p && !cJSON_IsObject(p))
		return pd_field_err(path, err, errsz, "proxy",
		                    "expected an object such as "
		                    "{\"contract\": \"toy\"}");
	for (const cJSON *k = p ? p->child : NULL; k; k = k->next)
		if (strcmp(k->string, "contract") && strcmp(k->string, "cmd") &&
		    strcmp(k->string, "ready"))
			return pd_field_err(path, err, errsz, "proxy",
			                    "unknown key \"%s\" (expected contract, cmd or ready)",
			                    k->string);
	if (p && (c = cJSON_GetObjectItemCaseSensitive(p, "contract"))) {
		size_t i;
		for (i = 0; i < sizeof(contracts) / sizeof(contracts[0]); i++)
			if (cJSON_IsString(c) && !strcmp(c->valuestring, contracts[i]))
				break;
		if (i == sizeof(contracts) / sizeof(contracts[0]))
			return pd_field_err(path, err, errsz, "proxy.contract",
			                    "expected v0, toy, mooncake or auto");
		name = contracts[i];
	}
	if (p && parse_proxy_cmd(path, p, sc, err, errsz))
		return -1;
	sc->proxy_contract = strdup(name);
	return sc->proxy_contract ? 0 : -1;
}

/* The contract a router is graded against: the scenario's, "auto" meaning its generation's. */
const char *hr_scenario_grade_contract(const struct hr_scenario *sc)
{
	if (sc->proxy_contract && strcmp(sc->proxy_contract, "auto"))
		return sc->proxy_contract;
	return contract_of_gen[sc->gen];
}

static bool env_name_ok(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!(isupper((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

static int parse_env(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                     size_t errsz)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "env");

	if (!e) {
		sc->env = cJSON_CreateObject();
		return sc->env ? 0 : -1;
	}
	if (!cJSON_IsObject(e))
		return pd_field_err(path, err, errsz, "env",
		                    "expected an object of NAME: \"value\"");
	for (const cJSON *k = e->child; k; k = k->next)
		if (!env_name_ok(k->string) || !cJSON_IsString(k) || strlen(k->valuestring) > 200)
			return pd_field_err(
			    path, err, errsz, "env",
			    "\"%s\": expected an upper-case NAME and a string value of at "
			    "most 200 characters",
			    k->string);
	sc->env = cJSON_Duplicate(e, 1);
	return sc->env ? 0 : -1;
}

int hr_scenario_parse_gen(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                          size_t errsz)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vllm");
	int r = cJSON_IsObject(v) /* per side (hr_scenario_sides.c) */
	            ? hr_scenario_parse_sides(path, v,
	                                      cJSON_GetObjectItemCaseSensitive(root, "generation"),
	                                      sc, err, errsz)
	            : parse_versions(path, root, sc, err, errsz) || hr_scenario_same_sides(sc);
	if (r || parse_proxy(path, root, sc, err, errsz) || parse_env(path, root, sc, err, errsz))
		return -1;
	return 0;
}
