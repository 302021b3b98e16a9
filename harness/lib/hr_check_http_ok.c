/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_http_ok: every request through the proxy answered 200 with a valid OpenAI body
 * (right "object", choices, usage; a stream ends with data: [DONE]). */
#include "hr.h"

#include <string.h>

static void one_line(char *dst, size_t sz, const char *s)
{
	size_t i = 0;
	for (; s && *s && i + 1 < sz; s++)
		dst[i++] = (*s == '\n' || *s == '\r') ? ' ' : *s;
	dst[i] = '\0';
}

static bool http_ok(const struct hr_run_data *rd, char *detail, size_t sz)
{
	size_t bad = 0, first = (size_t)-1, cut = 0;
	for (size_t i = 0; i < rd->nreqs; i++) {
		const struct hr_req *r = &rd->reqs[i];
		cut += r->cut; /* the client hung up on purpose (workload.disconnect_percent) */
		if ((r->status == 200 && !r->invalid) || r->cut)
			continue;
		if (!bad++)
			first = i;
	}
	if (!bad) {
		snprintf(detail, sz, "%zu of %zu requests answered 200 with valid OpenAI bodies%s",
		         rd->nreqs - cut, rd->nreqs - cut,
		         cut ? " (the clients that hung up aside)" : "");
		return true;
	}
	{
		const struct hr_req *r = &rd->reqs[first];
		char body[160];
		one_line(body, sizeof(body), r->body);
		if (r->status == 0)
			snprintf(detail, sz,
			         "%zu of %zu requests failed; first: request %d: no answer (%s)",
			         bad, rd->nreqs, r->idx, r->curl_err[0] ? r->curl_err : "not sent");
		else if (r->status != 200)
			snprintf(detail, sz,
			         "%zu of %zu requests failed; first: request %d: HTTP %ld %s", bad,
			         rd->nreqs, r->idx, r->status, body);
		else
			snprintf(detail, sz,
			         "%zu of %zu requests failed; first: request %d: HTTP 200 but %s",
			         bad, rd->nreqs, r->idx, r->invalid);
	}
	return false;
}

const struct hr_check hr_check_http_ok = {
    .name = "http_ok",
    .what = "every request answers 200 with a valid OpenAI body; streams end with [DONE]",
    .fn = http_ok,
};
