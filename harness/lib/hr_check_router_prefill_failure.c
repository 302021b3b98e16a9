/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_router_prefill_failure: while prefill answers 500 (--fault fail-marker), the router
 * must answer the client an error, never a decode answer that is a silent recompute. */
#include "hr_router.h"

#include <stdlib.h>
#include <string.h>

static bool prefill_failure(const struct hr_run_data *rd, char *detail, size_t sz)
{
	char statuses[64] = "";
	size_t at_d = 0;
	if (!rd->router_phase || !rd->nfail) {
		snprintf(detail, sz, "the prefill-failure phase did not run");
		return false;
	}
	for (size_t i = 0; i < rd->nfail; i++) {
		const struct hr_req *q = &rd->fail[i];
		const cJSON *p = hr_router_find(rd->rec_p, q->prompt);
		const cJSON *d = hr_router_find(rd->rec_d, q->prompt);
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(p, "status");
		size_t l = strlen(statuses);
		at_d += d != NULL;
		if (!p) {
			snprintf(detail, sz,
			         "request %d never reached prefill (client got HTTP %ld)", q->idx,
			         q->status);
			return false;
		}
		if (!cJSON_IsNumber(ps) || ps->valueint != 500) {
			snprintf(
			    detail, sz,
			    "request %d: prefill answered %d, not the injected 500 (did the router "
			    "change the prompt?)",
			    q->idx, cJSON_IsNumber(ps) ? ps->valueint : 0);
			return false;
		}
		if (q->status >= 200 && q->status < 300) {
			char *body =
			    d ? hr_router_show(cJSON_GetObjectItemCaseSensitive(d, "body"), 300)
			      : NULL;
			snprintf(detail, sz,
			         "falls through to decode: prefill answered 500 to request %d, the "
			         "router answered HTTP %ld%s%s",
			         q->idx, q->status, body ? "; decode got " : "", body ? body : "");
			free(body);
			return false;
		}
		if (q->status == 0) {
			snprintf(
			    detail, sz,
			    "prefill answered 500 to request %d and the router gave no answer "
			    "(%s)%s",
			    q->idx, q->curl_err[0] ? q->curl_err : "none",
			    d ? ": falls through to decode (decode got it and waits for KV that "
			        "never comes)"
			      : "");
			return false;
		}
		snprintf(statuses + l, sizeof(statuses) - l, "%s%ld", l ? ", " : "", q->status);
	}
	snprintf(detail, sz,
	         "prefill answered 500 to %zu requests; the router answered HTTP %s; decode got "
	         "%zu of them",
	         rd->nfail, statuses, at_d);
	return true;
}

const struct hr_check hr_check_router_prefill_failure = {
    .name = "router_prefill_failure",
    .what = "while prefill answers 500 the router answers an error, never decode's recompute",
    .fn = prefill_failure,
};
