/* SPDX-License-Identifier: Apache-2.0 */
/* hr_scenario_sides: "vllm" given per side ({"prefill": "0.20", "decode": "0.31"}), a rolling
 * upgrade's mixed deployment: each side's release and generation, and which side is newer. */
#include "hr.h"
#include "cfg/cfg_vllm.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int serr(const char *path, char *err, size_t errsz, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int serr(const char *path, char *err, size_t errsz, const char *field, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errsz, "%s: %s: ", path, field);
	if (n >= 0 && (size_t)n < errsz) {
		va_start(ap, fmt);
		vsnprintf(err + n, errsz - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Newer: the later generation, then the later release (generations follow release order). */
static bool newer(const struct cfg_vllm_info *a, const struct cfg_vllm_info *b)
{
	if (a->gen != b->gen)
		return a->gen > b->gen;
	if (a->major != b->major)
		return a->major > b->major;
	if (a->minor != b->minor)
		return a->minor > b->minor;
	return a->patch > b->patch;
}

int hr_scenario_parse_sides(const char *path, const cJSON *v, const cJSON *g,
                            struct hr_scenario *sc, char *err, size_t errsz)
{
	static const char *const keys[2] = {"prefill", "decode"};
	struct cfg_vllm_info info[2];
	char why[400], field[32];
	int n;

	if (g)
		return serr(path, err, errsz, "generation",
		            "cannot be combined with a per-side \"vllm\" object; each side's "
		            "release picks its generation");
	for (const cJSON *k = v->child; k; k = k->next)
		if (strcmp(k->string, keys[0]) && strcmp(k->string, keys[1]))
			return serr(path, err, errsz, "vllm",
			            "unknown key \"%s\" (expected {\"prefill\": \"X.Y\", "
			            "\"decode\": \"X.Y\"})",
			            k->string);
	for (int i = 0; i < 2; i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
		snprintf(field, sizeof(field), "vllm.%s", keys[i]);
		if (!s)
			return serr(path, err, errsz, field,
			            "missing (expected {\"prefill\": \"X.Y\", \"decode\": "
			            "\"X.Y\"})");
		if (!cJSON_IsString(s) || !*s->valuestring)
			return serr(path, err, errsz, field,
			            "expected a vLLM release such as \"0.16\"");
		if (cfg_vllm_lookup(s->valuestring, &info[i], why, sizeof(why)))
			return serr(path, err, errsz, field, "%s", why);
	}
	if (cfg_gen_is_v1(info[0].gen) != cfg_gen_is_v1(info[1].gen))
		return serr(path, err, errsz, "vllm",
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
	n = newer(&info[0], &info[1]) ? 0 : 1;
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
