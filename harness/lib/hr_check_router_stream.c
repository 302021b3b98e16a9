/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_router_stream: a streamed request passes through the router as SSE, decode gets
 * stream true, and the client sees every chunk up to data: [DONE]. */
#include "hr_router.h"

#include <string.h>

static bool router_stream(const struct hr_run_data *rd, char *detail, size_t sz)
{
	const struct hr_req *q = rd->probe;
	const cJSON *d, *st;
	if (!rd->router_phase || !q) {
		snprintf(detail, sz, "the streamed request was not sent");
		return false;
	}
	d = hr_router_find(rd->rec_d, q->prompt);
	st =
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "body"), "stream");
	if (q->status != 200) {
		snprintf(detail, sz, "streamed request: HTTP %ld %.200s", q->status,
		         q->curl_err[0] ? q->curl_err : (q->body ? q->body : ""));
		return false;
	}
	if (q->invalid) {
		snprintf(detail, sz, "streamed request: HTTP 200 but %s", q->invalid);
		return false;
	}
	if (!d || !cJSON_IsTrue(st)) {
		snprintf(detail, sz, "streamed request: decode %s",
		         d ? "did not get stream true" : "never got it");
		return false;
	}
	snprintf(detail, sz,
	         "streamed request: HTTP 200, %zu bytes of SSE ending with data: [DONE]; decode "
	         "got stream true",
	         q->body ? strlen(q->body) : 0);
	return true;
}

const struct hr_check hr_check_router_stream = {
    .name = "router_stream",
    .what = "a streamed request passes through as SSE and ends with data: [DONE]",
    .fn = router_stream,
};
