/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_router_ordering: V0 and gen A routers call decode only after prefill has answered
 * (decode needs what prefill returns, or the KV already inserted); gen B runs them together. */
#include "hr_router.h"

#include <string.h>

static double num(const cJSON *rec, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(rec, key);
	return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

static bool ordering(const struct hr_run_data *rd, char *detail, size_t sz)
{
	size_t n = 0, early = 0;
	double worst = 0;
	int worst_idx = -1;
	bool need = strcmp(rd->contract, "mooncake") != 0;
	if (!rd->router_phase) {
		snprintf(detail, sz, "no request records (the router phases did not run)");
		return false;
	}
	for (size_t i = 0; i < rd->nreqs; i++) {
		const cJSON *p = hr_router_find(rd->rec_p, rd->reqs[i].prompt);
		const cJSON *d = hr_router_find(rd->rec_d, rd->reqs[i].prompt);
		double answered = num(p, "t_answer"), started = num(d, "t_arrival");
		if (!p || !d || answered < 0 || started < 0)
			continue;
		n++;
		if (started < answered) {
			early++;
			if (answered - started > worst) {
				worst = answered - started;
				worst_idx = rd->reqs[i].idx;
			}
		}
	}
	if (!need) {
		snprintf(detail, sz,
		         "not required by the mooncake contract (prefill and decode run together): "
		         "%zu of %zu requests reached decode before prefill answered",
		         early, n);
		return true;
	}
	if (!n) {
		snprintf(detail, sz, "no request reached both prefill and decode");
		return false;
	}
	if (early)
		snprintf(
		    detail, sz,
		    "%zu of %zu requests reached decode before prefill answered; worst: request "
		    "%d, %.1f ms early (the %s contract needs prefill's answer first)",
		    early, n, worst_idx, worst * 1e3, rd->contract);
	else
		snprintf(detail, sz, "%zu of %zu requests: prefill answered before decode started",
		         n, n);
	return !early;
}

const struct hr_check hr_check_router_ordering = {
    .name = "router_ordering",
    .what = "V0 and gen A: prefill answered before decode started (recorded times)",
    .fn = ordering,
};
