/* SPDX-License-Identifier: Apache-2.0 */
/* hr_scenario_sides: "vllm" given per side ({"prefill": "0.20", "decode": "0.31"}), a rolling
 * upgrade's mixed deployment: each side's release and generation, and which side is newer. */
#include "hr.h"
#include "cfg/cfg_vllm.h"
#include "pd_util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int hr_scenario_parse_sides(const char *path, const cJSON *v, const cJSON *g,
                            struct hr_scenario *sc, char *err, size_t errsz)
{
	static const char *const keys[2] = {"prefill", "decode"};
	struct cfg_vllm_info info[2];
	char why[400], field[32];
	int n;

	if (g)
		return pd_field_err(
		    path, err, errsz, "generation",
		    "cannot be combined with a per-side \"vllm\" object; each side's "
		    "release picks its generation");
	for (const cJSON *k = v->child; k; k = k->next)
		if (strcmp(k->string, keys[0]) && strcmp(k->string, keys[1]))
			return pd_field_err(path, err, errsz, "vllm",
			                    "unknown key \"%s\" (expected {\"prefill\": \"X.Y\", "
			                    "\"decode\": \"X.Y\"})",
			                    k->string);
	for (int i = 0; i < 2; i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
		snprintf(field, sizeof(field), "vllm.%s", keys[i]);
		if (!s)
			return pd_field_err(path, err, errsz, field,
			                    "missing (expected {\"prefill\": \"X.Y\", \"decode\": "
			                    "\"X.Y\"})");
		if (!cJSON_IsString(s) || !*s->valuestring)
			return pd_field_err(path, err, errsz, field,
			                    "expected a vLLM release such as \"0.16\"");
		if (cfg_vllm_lookup(s->valuestring, &info[i], why, sizeof(why)))
			return pd_field_err(path, err, errsz, field, "%s", why);
	}
	if (cfg_gen_is_v1(info[0].gen) != cfg_gen_is_v1(info[1].gen))
		return pd_field_err(
		    path, err, errsz, "vllm",
		    "prefill %s speaks generation %s and decode %s generation %s: the V0 "
		    "pipe and a V1 connector share no wire; pick two V0 or two V1 releases",
		    info[0].version, cfg_gen_name(info[0].gen), info[1].version,
		    cfg_gen_name(info[1].gen));
	for (int i = 0; i < 2; i++) {
		sc->vllm_side[i] = strdup(info[i].version);
		sc->gen_side[i] = (int)info[i].gen;
		if (!sc->vllm_side[i])
			return -1;
	}
	n = cfg_vllm_newer(&info[0], &info[1]) ? 0 : 1;
	sc->gen = (int)info[n].gen;
	sc->vllm = strdup(info[n].version);
	return sc->vllm ? 0 : -1;
}

int hr_scenario_same_sides(struct hr_scenario *sc)
{
	for (int i = 0; i < 2; i++) {
		sc->gen_side[i] = sc->gen;
		sc->vllm_side[i] = strdup(sc->vllm);
		if (!sc->vllm_side[i])
			return -1;
	}
	return 0;
}

const char *hr_scenario_vllm_label(const struct hr_scenario *sc, char *buf, size_t sz)
{
	if (sc->vllm_side[0] && sc->vllm_side[1] &&
	    (strcmp(sc->vllm_side[0], sc->vllm_side[1]) || sc->gen_side[0] != sc->gen_side[1]))
		snprintf(buf, sz, "prefill %s, decode %s", sc->vllm_side[0], sc->vllm_side[1]);
	else
		snprintf(buf, sz, "%s", sc->vllm ? sc->vllm : "");
	return buf;
}
